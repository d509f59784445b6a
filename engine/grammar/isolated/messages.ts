/**
 * What the main thread and a grammar worker say to each other.
 *
 * Jobs (compile, start a constraint, dispose) are ordinary messages with a reply message. Per-token calls
 * (mask, accept, ...) are synchronous for the caller: the request goes as a message, the caller blocks
 * on Atomics.wait, and the worker writes the answer into shared memory (sync-channel.ts). The engine's
 * per-step constraint interface stays synchronous that way, and each call is bounded by a timeout.
 */
import type { GrammarSpec } from '../spec.ts';
import type { TokenTableData } from '../token-table.ts';

export interface WorkerInit {
  table: TokenTableData;
  /** Shared memory of the synchronous channel. */
  channel: SharedArrayBuffer;
  /** Most bytes the wasm heap may grow to; growing past it fails inside xgrammar, which then aborts. */
  memoryBytes: number;
}

export type Job =
  | { kind: 'compile'; id: number; spec: GrammarSpec; probe?: MatchProbe }
  | { kind: 'start'; id: number; spec: GrammarSpec; maxTokens?: number };

/**
 * After compiling in the sandbox, follow the grammar for a few tokens, choosing among the allowed ones at
 * random: a grammar that compiles quickly can still be slow to match (a pattern like `(((a*)*)*)*b`).
 */
export interface MatchProbe {
  tokens: number;
  /** Longest one step (mask, accept, forced tokens) may take. */
  stepMs: number;
  seed: number;
}

export type JobReply =
  | { id: number; ok: true; warnings: string[]; compileMs: number; cid?: number; tainted: boolean }
  | { id: number; ok: false; error: SerializedError; tainted: boolean };

export interface SerializedError {
  name: string;
  message: string;
  param?: string;
}

/** A per-token call; the answer comes back through the shared channel. */
export interface SyncRequest {
  kind: 'sync';
  seq: number;
  op: SyncOp;
  cid: number;
  arg: number;
}

export type WorkerMessage = Job | SyncRequest | { kind: 'dispose'; cid: number };

export const enum SyncOp {
  Mask = 1,
  Accept = 2,
  IsDone = 3,
  Forced = 4,
  DeadEnd = 5,
}

/** Bits of the flags word in every sync answer. */
export const enum StateFlag {
  Done = 1,
  Complete = 2,
  DeadEnd = 4,
  /** The answer carries the mask for the current state. */
  HasMask = 8,
  /** The worker's xgrammar instance trapped or aborted: it should serve no new work. */
  Tainted = 16,
}
