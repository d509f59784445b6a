/**
 * The engine's public contract: what the protocol layer and the CLI program against.
 * Nothing here knows about HTTP, keys or specialists.
 */
import type { GrammarCompiler } from './grammar/handle.ts';
import type { Tokenizer } from './tokenizer/types.ts';
import type { LoraTarget } from './lora/adapter-file.ts';

export type { LoraTarget } from './lora/adapter-file.ts';

export interface ModelInfo {
  /** general.name or the file name. */
  name: string;
  architecture: string;
  /** Context window the engine runs with (tokens); prompt + completion must fit. */
  contextLength: number;
  vocabSize: number;
  parameterCount: number;
  /** tokenizer.chat_template from the GGUF, if any. */
  chatTemplate?: string;
  /** Where the weights came from (path or URL). */
  source: string;
}

/**
 * A per-step restriction on which tokens may be sampled (grammar-constrained decoding).
 * The engine asks for a mask before sampling each token and reports the sampled token back.
 */
export interface TokenConstraint {
  /** Bitmask over the vocabulary (bit i of word i>>5 set = token i allowed), or null for no restriction. */
  mask(): Uint32Array | null;
  /** The token that was sampled. */
  accept(token: number): void;
  /** The constraint is complete and allows nothing more: generation ends with finishReason `stop`. */
  isDone(): boolean;
  /**
   * Jump-forward decoding: tokens the constraint forces next (at most `limit`), which the engine appends
   * without sampling and writes to the cache in the next step together with the last sampled token.
   */
  forcedTokens?(limit: number): number[];
  /** Release what the constraint holds (grammar matcher memory); called once when generation ends. */
  dispose?(): void;
  /**
   * For constraints answered by another thread (a grammar worker): pin that thread for one step, or
   * false while it is busy (compiling), in which case the step leaves this sequence out. Every hold
   * that succeeded is released after the step's results are taken.
   */
  hold?(): boolean;
  release?(): void;
  /** Resolves when hold() may succeed again. */
  whenReady?(): Promise<void>;
}

export interface GenerateOptions {
  /** Text to encode (BOS added per the model) ... */
  prompt?: string;
  /** ... or token ids used as they are. Exactly one of prompt/tokens. */
  tokens?: readonly number[];
  /** Completion tokens at most (default 256). */
  maxTokens?: number;
  /** 0 = greedy (default 0). */
  temperature?: number;
  /** Nucleus sampling mass in (0, 1] (default 1). */
  topP?: number;
  /** Sample among the k most likely tokens; 0 = no limit (default 0). */
  topK?: number;
  /** Seed for reproducible sampling; random when absent. */
  seed?: number;
  /** Generation ends before any of these strings; the stop string is not part of the output. */
  stop?: readonly string[];
  /** OpenAI-style penalties in [-2, 2] (default 0). */
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** llama.cpp-style multiplicative penalty > 0 (default 1 = off). */
  repetitionPenalty?: number;
  /** Aborting stops generation and frees the sequence's cache pages. */
  signal?: AbortSignal;
  /** Grammar or other constraint applied to every sampled token. */
  constraint?: TokenConstraint;
  /** Stop at end-of-generation tokens (default true). */
  stopAtEndOfGeneration?: boolean;
  /**
   * Id of a loaded LoRA adapter (AdapterHandle.id) to run this generation with; absent: the base
   * model. An unknown or unloading id is an EngineInputError (param `adapter`).
   */
  adapter?: string;
}

/** A LoRA adapter loaded into an engine (WebGpuEngine.loadAdapter). */
export interface AdapterHandle {
  /** 'lora-1', 'lora-2', …: what GenerateOptions.adapter names; never reused by one engine. */
  id: string;
  /** LoadAdapterOptions.name, else the file's general.name, else the file name. */
  name: string;
  /** The largest rank among its matrices. */
  rank: number;
  /** adapter.lora.alpha (0: none, the delta is scaled by `scale` alone). */
  alpha: number;
  /** The user scale given at load (default 1): each delta is multiplied by scale · alpha / rank. */
  scale: number;
  /** The matrices it adapts, in LORA_TARGETS order. */
  targets: LoraTarget[];
  /** Layers with at least one adapted matrix. */
  layers: number;
  /** Its A and B weights as F32 on the GPU. */
  bytes: number;
}

export interface LoadAdapterOptions {
  name?: string;
  /** Multiplies the adapter's delta (default 1), as llama.cpp's LoRA scale. */
  scale?: number;
}

/** One streamed piece: the text completed by these tokens (valid UTF-8, possibly '') and the token ids. */
export interface GenerationChunk {
  text: string;
  tokens: number[];
  /** Natural-log probability of each token under the distribution it was sampled from (after masking). */
  logprobs: number[];
}

export type FinishReason = 'stop' | 'length';

export interface GenerationTimings {
  /** Time from the call to the first generated token. */
  timeToFirstTokenMs: number;
  prefillMs: number;
  decodeMs: number;
  /** Prompt tokens computed per second of prefill (the prefill tokens below, not the whole prompt). */
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
  /** Time spent waiting for the engine to be free (other requests) before prefill started. */
  queuedMs: number;
  /** Prompt tokens whose KV came from the prefix cache (pages shared with earlier requests, and the matching start of the page after them copied). */
  cachedPromptTokens: number;
  /** Prompt tokens left for prefill to compute: promptTokens - cachedPromptTokens (at least 1). */
  prefillTokens: number;
}

export interface GenerationResult {
  finishReason: FinishReason;
  /** Why it stopped, in more detail than finishReason. */
  stoppedBy: 'end-of-generation' | 'stop-sequence' | 'constraint' | 'max-tokens' | 'context-full' | 'aborted';
  text: string;
  tokens: number[];
  promptTokens: number;
  completionTokens: number;
  /** Completion tokens a constraint forced (jump-forward), appended without a sampling step. */
  forcedTokens: number;
  timings: GenerationTimings;
}

/**
 * Iterate for chunks; `result` settles when generation ends. An abort ends it normally, with stoppedBy
 * `aborted` and the tokens so far; `result` rejects only on a failure (device lost, constraint error).
 */
export interface Generation extends AsyncIterable<GenerationChunk> {
  readonly result: Promise<GenerationResult>;
}

export interface TextEngine {
  readonly info: ModelInfo;
  readonly tokenizer: Tokenizer;
  /**
   * Where this engine's grammars are compiled and matched (in Node: workers, see
   * engine/grammar/isolated); absent means in this thread.
   */
  readonly grammars?: GrammarCompiler;
  generate(options: GenerateOptions): Generation;
  dispose(): Promise<void>;
}

/** Errors the caller caused (bad parameters, prompt too long): the protocol maps them to 400. */
/**
 * The engine holds as many adapters as it can (EngineOptions.maxAdapters). Not the caller's mistake: an
 * adapter unloaded makes room, so a server answers it as busy, not as a bad request.
 */
export class AdapterCapacityError extends Error {
  constructor(readonly limit: number) {
    super(`${limit} adapters are loaded, the most this engine holds (EngineOptions.maxAdapters); unload one first`);
    this.name = 'AdapterCapacityError';
  }
}

export class EngineInputError extends Error {
  constructor(
    message: string,
    /** The option at fault, e.g. `maxTokens` or `prompt`. */
    readonly param?: string,
  ) {
    super(message);
    this.name = 'EngineInputError';
  }
}
