/**
 * One request's state inside the scheduler: its prompt, what is already in the KV cache, what it has
 * generated, and the per-token bookkeeping (stop strings, UTF-8 streaming, penalties, constraint).
 */
import type { StreamDecoder, Tokenizer } from '../tokenizer/types.ts';
import type { GenerationResult, TokenConstraint } from '../types.ts';
import { ChunkQueue } from './chunk-queue.ts';
import { REPETITION_WINDOW, type ResolvedOptions } from './options.ts';
import { randomSeed, seededRandom } from './rng.ts';
import { StopMatcher } from './stop-matcher.ts';

export type StopReason = GenerationResult['stoppedBy'];

export class Sequence {
  slot = -1;
  /** Positions of prompt + generated tokens already written to the KV cache. */
  cached = 0;
  /** Tokens added to the step now running (counted as cached once it completes). */
  pendingWrite = 0;
  /** Prompt tokens whose KV pages came from the prefix cache at admission (not computed). */
  cachedPromptTokens = 0;
  /**
   * Rows to copy into the sequence's own page before its first step (the prefix cache's partial page,
   * PrefixMatch.partial): positions `to * pageSize ...` take the first `rows` positions of page `from`,
   * on which the sequence holds a reference until the copy is encoded.
   */
  pendingCopy: { from: number; to: number; rows: number } | undefined;
  /** Leading full pages of this sequence the prefix cache lists already. */
  listedPages = 0;
  /** Neither matches nor lists prefix-cache pages (the engine's warm-up, which no request shares). */
  uncached = false;
  /** Generated tokens a constraint forced (jump-forward). */
  forced = 0;
  readonly generated: number[] = [];
  private text = '';
  readonly seed: number;
  readonly random: () => number;
  readonly queue = new ChunkQueue();
  private readonly decoder: StreamDecoder;
  private readonly stopMatcher: StopMatcher;
  /** Occurrences of each generated token (presence/frequency penalties). */
  readonly generatedCounts = new Map<number, number>();
  /**
   * The LoRA adapter this sequence runs with: its pool slot (StepRunner.addToken) and its id, which
   * keys the sequence's pages in the prefix cache. Undefined: the base model.
   */
  adapter: { slot: number; id: string } | undefined;
  aborted = false;
  finished = false;
  readonly createdAt = performance.now();
  admittedAt = 0;
  firstTokenAt = 0;

  constructor(
    readonly id: number,
    readonly prompt: readonly number[],
    readonly options: ResolvedOptions,
    /** Positions this sequence may reach: prompt + completion, within the context. */
    readonly maxLength: number,
    private readonly tokenizer: Tokenizer,
    readonly constraint: TokenConstraint | undefined,
  ) {
    this.seed = options.seed ?? randomSeed();
    this.random = seededRandom(this.seed);
    this.decoder = tokenizer.streamDecoder();
    this.stopMatcher = new StopMatcher(options.stop);
  }

  get inPrefill(): boolean {
    return this.cached < this.prompt.length;
  }

  /**
   * Generated tokens not yet in the cache, fed in the next decode step at positions `cached`...: the last
   * sampled token, plus any a constraint forced after it.
   */
  unwritten(): number[] {
    return this.generated.slice(this.cached - this.prompt.length);
  }

  usesPenalties(): boolean {
    const o = this.options;
    return o.presencePenalty !== 0 || o.frequencyPenalty !== 0 || o.repetitionPenalty !== 1;
  }

  /** Distinct previous tokens with their generated counts and whether they are in the repetition window. */
  penaltyEntries(): { token: number; count: number; inWindow: boolean }[] {
    const window = new Set<number>();
    if (this.options.repetitionPenalty !== 1) {
      const all = this.prompt.length + this.generated.length;
      for (let i = Math.max(0, all - REPETITION_WINDOW); i < all; i++) {
        window.add(i < this.prompt.length ? this.prompt[i] : this.generated[i - this.prompt.length]);
      }
    }
    const out: { token: number; count: number; inWindow: boolean }[] = [];
    for (const [token, count] of this.generatedCounts) out.push({ token, count, inWindow: window.has(token) });
    for (const token of window) if (!this.generatedCounts.has(token)) out.push({ token, count: 0, inWindow: true });
    return out;
  }

  /**
   * Take a sampled token. Returns why the sequence ends, or undefined to go on. Emits a chunk with the
   * text this token completes.
   */
  accept(token: number, logprob: number): StopReason | undefined {
    if (this.firstTokenAt === 0) this.firstTokenAt = performance.now();
    this.generated.push(token);
    this.generatedCounts.set(token, (this.generatedCounts.get(token) ?? 0) + 1);
    this.constraint?.accept(token);
    if (this.options.stopAtEndOfGeneration && this.tokenizer.isEndOfGeneration(token)) {
      this.emit('', [token], [logprob]);
      return 'end-of-generation';
    }
    const piece = this.tokenizer.isControl(token) ? '' : this.decoder.push(token);
    const { emit, stopped } = this.stopMatcher.push(piece);
    this.emit(emit, [token], [logprob]);
    if (stopped) return 'stop-sequence';
    if (this.constraint?.isDone()) return 'constraint';
    if (this.generated.length >= this.options.maxTokens) return 'max-tokens';
    if (this.prompt.length + this.generated.length >= this.maxLength) return 'context-full';
    return undefined;
  }

  /**
   * Jump-forward: append the tokens the constraint forces now, through the same bookkeeping as sampled
   * ones. Returns why the sequence ends, or undefined to go on.
   */
  acceptForced(): StopReason | undefined {
    const c = this.constraint;
    if (!c?.forcedTokens) return undefined;
    const room = Math.min(this.options.maxTokens - this.generated.length, this.maxLength - this.prompt.length - this.generated.length);
    for (const t of c.forcedTokens(Math.min(32, room))) {
      this.forced++;
      const reason = this.accept(t, 0);
      if (reason) return reason;
    }
    return undefined;
  }

  private emit(text: string, tokens: number[], logprobs: number[]): void {
    this.text += text;
    this.queue.push({ text, tokens, logprobs });
  }

  /** End the sequence: flush held-back text and settle the result. */
  finish(reason: StopReason): void {
    if (this.finished) return;
    this.finished = true;
    this.constraint?.dispose?.();
    if (reason !== 'stop-sequence') {
      const tail = this.stopMatcher.flush() + this.decoder.flush();
      if (tail) this.emit(tail, [], []);
    }
    const now = performance.now();
    const first = this.firstTokenAt || now;
    const admitted = this.admittedAt || now;
    const prefillMs = first - admitted;
    const decodeMs = now - first;
    const n = this.generated.length;
    const prefillTokens = this.prompt.length - this.cachedPromptTokens;
    this.queue.finish({
      finishReason: reason === 'max-tokens' || reason === 'context-full' ? 'length' : 'stop',
      stoppedBy: reason,
      text: this.text,
      tokens: [...this.generated],
      promptTokens: this.prompt.length,
      completionTokens: n,
      forcedTokens: this.forced,
      timings: {
        timeToFirstTokenMs: first - this.createdAt,
        queuedMs: admitted - this.createdAt,
        prefillMs,
        decodeMs,
        prefillTokensPerSecond: prefillMs > 0 ? (prefillTokens / prefillMs) * 1000 : 0,
        decodeTokensPerSecond: decodeMs > 0 && n > 1 ? ((n - 1) / decodeMs) * 1000 : 0,
        cachedPromptTokens: this.cachedPromptTokens,
        prefillTokens,
      },
    });
  }

  fail(error: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.constraint?.dispose?.();
    this.queue.fail(error);
  }
}
