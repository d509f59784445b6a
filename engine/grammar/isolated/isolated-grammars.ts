/**
 * Grammars compiled and matched off the main thread, so no request's grammar can stall or break the
 * service for others.
 *
 * Two workers per model: a sandbox and a serving worker. Every grammar not seen before is first compiled
 * in the sandbox under a time budget and a wasm memory budget: past the time the sandbox is terminated
 * (the only way to stop wasm) and the request gets a 400 naming its grammar; a trap or abort there
 * discards the sandbox. Only grammars the sandbox compiled within budget reach the serving worker, which
 * holds the matchers of running generations; so the worker other requests depend on only ever compiles
 * what is known to compile, within about the budget. If the serving worker's xgrammar still traps, it
 * takes no new work and is replaced, and finishes or fails only the constraints it already serves.
 */
import { cacheKey, checkSpec, compileGrammar, paramOf } from '../compile.ts';
import type { ConstraintOptions } from '../constraint.ts';
import { GrammarBusyError, GrammarEngineError, GrammarInputError } from '../errors.ts';
import type { ConstraintHandle, GrammarCompiler, GrammarHandle } from '../handle.ts';
import { LruCache } from '../lru.ts';
import type { GrammarSpec } from '../spec.ts';
import { tokenTableData, type GrammarTokenizer, type TokenTableData } from '../token-table.ts';
import type { JobReply } from './messages.ts';
import { RemoteConstraint } from './remote-constraint.ts';
import { channelBuffer } from './sync-channel.ts';
import { GrammarWorker, JobTimeout, WorkerGone, type SpawnGrammarWorker } from './worker-handle.ts';

export interface GrammarIsolationOptions {
  /** Longest a new grammar may take to compile in the sandbox (default 5000 ms). */
  compileTimeoutMs?: number;
  /** Most wasm memory a grammar worker may use (default 512 MiB). */
  memoryMiB?: number;
  /** Longest one step of the sandbox's probe may take (matching only, no budget search). Default 250 ms. */
  probeStepMs?: number;
  /**
   * Longest one per-token call in the serving worker may take (it blocks the calling thread that long at
   * most), budget search near max_tokens included. Default 1000 ms.
   */
  callTimeoutMs?: number;
  /** New grammars waiting for the sandbox, at most; more get GrammarBusyError (default 16). */
  maxQueuedCompiles?: number;
  /**
   * Where the grammars of running generations live: a serving worker (default), answered by blocking
   * calls (Atomics.wait: Node, or a browser worker of a cross-origin-isolated page), or this thread
   * (`in-process`: a page's main thread, which may not block), after the sandbox has checked the grammar.
   */
  serving?: 'worker' | 'in-process';
  /** Tokens the sandbox follows each new grammar for, at random, timing each step (default 32; 0: none). */
  probeTokens?: number;
}

export const DEFAULT_COMPILE_TIMEOUT_MS = 5000;
export const DEFAULT_GRAMMAR_MEMORY_MIB = 512;
export const DEFAULT_PROBE_STEP_MS = 250;
export const DEFAULT_CALL_TIMEOUT_MS = 1000;
const REMEMBERED = 256;
/** Tokens the sandbox follows a new grammar for, at random, to see that matching it is quick too. */
const PROBE_TOKENS = 32;

export class IsolatedGrammars implements GrammarCompiler {
  private readonly table: TokenTableData;
  private readonly maskWords: number;
  private readonly compileTimeoutMs: number;
  private readonly memoryBytes: number;
  private readonly probeStepMs: number;
  private readonly callTimeoutMs: number;
  private readonly maxQueued: number;
  private readonly inProcess: boolean;
  private readonly probeTokens: number;
  private serving: GrammarWorker | undefined;
  private sandbox: GrammarWorker | undefined;
  private sandboxQueue: Promise<unknown> = Promise.resolve();
  private queued = 0;
  /** Grammars the sandbox compiled within budget, and the input errors it found (same answer next time). */
  private readonly verified = new LruCache<string, true>(REMEMBERED);
  private readonly refused = new LruCache<string, GrammarInputError>(REMEMBERED);
  private disposed = false;
  /** Workers replaced after a trap, a crash or a timeout (for tests and diagnostics). */
  replaced = 0;

  constructor(
    private readonly tokenizer: GrammarTokenizer,
    private readonly spawn: SpawnGrammarWorker,
    opts: GrammarIsolationOptions = {},
  ) {
    this.table = tokenTableData(tokenizer);
    this.maskWords = Math.ceil(tokenizer.vocabSize / 32);
    this.compileTimeoutMs = opts.compileTimeoutMs ?? DEFAULT_COMPILE_TIMEOUT_MS;
    this.memoryBytes = (opts.memoryMiB ?? DEFAULT_GRAMMAR_MEMORY_MIB) * 2 ** 20;
    this.probeStepMs = opts.probeStepMs ?? DEFAULT_PROBE_STEP_MS;
    this.callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.maxQueued = opts.maxQueuedCompiles ?? 16;
    this.inProcess = opts.serving === 'in-process';
    this.probeTokens = opts.probeTokens ?? PROBE_TOKENS;
  }

  /** Start both workers now, so the first request does not wait for xgrammar to load. */
  async warm(): Promise<void> {
    await Promise.all([this.inProcess ? undefined : this.servingWorker().ready, this.sandboxWorker().ready]);
  }

  async compile(spec: GrammarSpec): Promise<GrammarHandle> {
    checkSpec(spec);
    const key = cacheKey(spec);
    const known = this.refused.get(key);
    if (known) throw known;
    if (!this.verified.get(key)) await this.verify(spec, key);
    if (this.inProcess) return compileGrammar(this.tokenizer, spec);
    const reply = await this.onServing((w) => w.job({ kind: 'compile', spec }));
    return {
      warnings: reply.warnings,
      compileMs: reply.compileMs,
      createConstraint: (opts?: ConstraintOptions) => this.start(spec, opts),
    };
  }

  dispose(): void {
    this.disposed = true;
    this.serving?.kill('disposed');
    this.sandbox?.kill('disposed');
  }

  private async start(spec: GrammarSpec, opts: ConstraintOptions = {}): Promise<ConstraintHandle> {
    let worker: GrammarWorker | undefined;
    const reply = await this.onServing((w) => {
      worker = w;
      return w.job({ kind: 'start', spec, maxTokens: opts.maxTokens });
    });
    return new RemoteConstraint(worker!, reply.cid!, this.table.vocabSize, paramOf(spec));
  }

  /** A job on the serving worker; a worker that died under it is replaced and the job tried once more. */
  private async onServing(run: (w: GrammarWorker) => Promise<JobReply>): Promise<JobReply & { ok: true }> {
    for (let attempt = 0; ; attempt++) {
      const w = this.servingWorker();
      let reply: JobReply;
      try {
        reply = await run(w);
      } catch (e) {
        if (e instanceof WorkerGone && attempt === 0) continue;
        throw new GrammarEngineError(`the grammar worker failed: ${(e as Error).message}`);
      }
      if (reply.ok) return reply;
      throw reviveError(reply.error);
    }
  }

  /** Compile in the sandbox under the budgets; remember the verdict. */
  private async verify(spec: GrammarSpec, key: string): Promise<void> {
    if (this.queued >= this.maxQueued) {
      throw new GrammarBusyError(`${this.queued} grammars are already waiting to be compiled; try again shortly`, Math.ceil(this.compileTimeoutMs / 1000));
    }
    this.queued++;
    const turn = this.sandboxQueue.then(() => this.verifyNow(spec, key));
    this.sandboxQueue = turn.catch(() => {});
    try {
      await turn;
    } finally {
      this.queued--;
    }
  }

  private async verifyNow(spec: GrammarSpec, key: string): Promise<void> {
    if (this.verified.get(key)) return;
    const known = this.refused.get(key);
    if (known) throw known;
    const param = paramOf(spec);
    const w = this.sandboxWorker();
    await w.ready;
    let reply: JobReply;
    try {
      reply = await w.job({ kind: 'compile', spec, probe: this.probeTokens > 0 ? { tokens: this.probeTokens, stepMs: this.probeStepMs, seed: 1 } : undefined }, this.compileTimeoutMs);
    } catch (e) {
      this.replaced++;
      if (e instanceof JobTimeout) {
        throw this.refuse(key, `${param}: compiling it took longer than the ${this.compileTimeoutMs} ms budget; make it smaller or simpler (fewer properties or enum values, smaller length bounds and repetition counts, less nesting, no nested repetition such as (a*)* in a pattern)`, param);
      }
      throw this.refuse(key, `${param}: the grammar compiler failed on it (${(e as Error).message}); make it smaller or simpler`, param);
    }
    if (reply.tainted) {
      this.replaced++;
      w.kill('its grammar runtime failed');
    }
    if (reply.ok) {
      this.verified.set(key, true);
      return;
    }
    const err = reviveError(reply.error);
    if (err instanceof GrammarInputError) throw this.refuse(key, err.message, err.param ?? param);
    // Anything else the grammar made xgrammar do (a trap, an abort) is this input's doing.
    throw this.refuse(key, `${param}: the grammar engine could not compile it: ${err.message}`, param);
  }

  private refuse(key: string, message: string, param: string): GrammarInputError {
    const err = new GrammarInputError(message, param);
    this.refused.set(key, err);
    return err;
  }

  private servingWorker(): GrammarWorker {
    if (!this.serving?.usable) {
      if (this.serving) this.replaced++;
      this.serving = this.newWorker();
    }
    return this.serving;
  }

  private sandboxWorker(): GrammarWorker {
    if (!this.sandbox?.usable) this.sandbox = this.newWorker();
    return this.sandbox;
  }

  private newWorker(): GrammarWorker {
    if (this.disposed) throw new GrammarEngineError('the grammar workers have been disposed');
    return new GrammarWorker(this.spawn, { table: this.table, memoryBytes: this.memoryBytes }, channelBuffer(this.maskWords), this.callTimeoutMs);
  }
}

function reviveError(e: { name: string; message: string; param?: string }): Error {
  if (e.name === 'GrammarInputError' || e.name === 'EngineInputError') return new GrammarInputError(e.message, e.param ?? 'grammar');
  return new GrammarEngineError(e.message);
}
