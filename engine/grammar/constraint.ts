/**
 * A grammar as the engine's per-step TokenConstraint: one xgrammar GrammarMatcher per generation.
 *
 * The engine calls mask() before sampling each token and accept() after; isDone() ends generation as
 * soon as the grammar is complete and allows nothing but end-of-generation (so no step is spent sampling
 * EOS), or has reached a dead end. forcedTokens() is for jump-forward decoding (see below).
 */
import type { TokenConstraint } from '../types.ts';
import { GrammarEngineError } from './errors.ts';
import { budgetFilter, CLOSING_WINDOW, closingTokens, tokenizeAccepted } from './closing.ts';
import { UTF8_INVALID, Utf8State, utf8Run, type Utf8Guard } from './utf8-guard.ts';
import type { GrammarVocabulary } from './vocabulary.ts';
import type { MatcherHandle, XGrammarApi } from './xgrammar.ts';

export type Matcher = Awaited<ReturnType<XGrammarApi['GrammarMatcher']['createGrammarMatcher']>>;
type XgCompiledGrammar = Parameters<XGrammarApi['GrammarMatcher']['createGrammarMatcher']>[0];

const TAIL_BYTES = 48;
/** Earlier plans budgetFilter tries after a token before searching (the shortest kept). */
const EARLIER_PLANS = 4;
/** Slack (tokens beyond the plan) within which every allowed token is checked at least. */
const FILTER_SLACK = 16;

export interface ConstraintOptions {
  /**
   * The generation's token budget (max tokens, or what the context leaves). Near its end the constraint
   * steers generation into the shortest completion it can find (closing open strings, objects, arrays
   * and calls), so the output is complete rather than cut off. Without it, a model that rambles inside a
   * JSON string ends with finishReason `length` and incomplete output.
   */
  maxTokens?: number;
}

/** Matchers nobody disposed are deleted when their constraint is garbage-collected (wasm memory). */
const orphans = new FinalizationRegistry<Matcher>((m) => {
  try {
    m.dispose();
  } catch {
    // already deleted
  }
});

/** Bit i of word i>>5 for every stop token: to tell "only stopping is allowed" from a real choice. */
const stopMasks = new WeakMap<GrammarVocabulary, Uint32Array>();
function stopMaskOf(v: GrammarVocabulary): Uint32Array {
  let m = stopMasks.get(v);
  if (!m) {
    m = new Uint32Array(v.maskWords);
    for (const t of v.stopTokens) m[t >>> 5] |= 1 << (t & 31);
    stopMasks.set(v, m);
  }
  return m;
}

export class GrammarConstraint implements TokenConstraint {
  private readonly words: Uint32Array;
  private readonly stopMask: Uint32Array;
  private readonly handle: MatcherHandle;
  private readonly guard: Utf8Guard;
  /** UTF-8 state of the output so far (utf8-guard.ts). */
  private utf8: number = Utf8State.Ready;
  /** `words` holds the mask of the current state. */
  private fresh = false;
  private onlyStop = false;
  private terminated = false;
  private disposed = false;
  private failure: string | undefined;
  /** The last bytes generated, for error messages. */
  private tail = new Uint8Array(0);
  /** Tokens accepted so far. */
  accepted = 0;
  private readonly budget: number | undefined;
  /** Tokens left when the budget check starts: CLOSING_WINDOW plus the shortest answer's length. */
  private window = CLOSING_WINDOW;
  /**
   * Near the end of the budget: a completion from the current state (undefined when none was found, or
   * far from the end). While it fits, every token allowed leaves a completion that fits; once only it
   * fits, it is forced.
   */
  private plan: number[] | undefined;
  /** A few distinct plans of earlier steps, shortest first: often what closes after a token (budgetFilter). */
  private earlierPlans: number[][] = [];
  private longestPlan = 0;
  /** From the last budget check: the completion known after each token it let through. */
  private planAfter: Map<number, number[]> | undefined;

  private constructor(
    readonly vocabulary: GrammarVocabulary,
    private readonly matcher: Matcher,
    /** Kept so the compiled grammar lives as long as its matcher. */
    readonly compiled: XgCompiledGrammar,
    opts: ConstraintOptions,
  ) {
    if (opts.maxTokens !== undefined && !(Number.isInteger(opts.maxTokens) && opts.maxTokens >= 1)) {
      throw new RangeError(`maxTokens must be an integer ≥ 1 (got ${opts.maxTokens})`);
    }
    this.budget = opts.maxTokens;
    this.words = new Uint32Array(vocabulary.maskWords);
    this.stopMask = stopMaskOf(vocabulary);
    this.handle = (matcher as unknown as { handle: MatcherHandle }).handle;
    this.guard = vocabulary.utf8Guard();
    orphans.register(this, matcher, this);
    if (this.budget !== undefined) {
      // A long shortest answer (a tool with many required arguments) widens the window by its length.
      const shortest = closingTokens(vocabulary, matcher, this.utf8);
      this.window = CLOSING_WINDOW + (shortest?.length ?? 0);
      this.replan(this.budget, shortest ?? undefined);
    }
  }

  static async create(vocabulary: GrammarVocabulary, compiled: XgCompiledGrammar, opts: ConstraintOptions = {}): Promise<GrammarConstraint> {
    const matcher = await vocabulary.runtime.run(
      (api) => api.GrammarMatcher.createGrammarMatcher(compiled),
      (m) => new GrammarEngineError(`xgrammar could not start a matcher: ${m}`),
    );
    return new GrammarConstraint(vocabulary, matcher, compiled, opts);
  }

  /**
   * The allowed next tokens, as a bitmask of ceil(vocab/32) words. The same array is returned each call
   * and rewritten after the next accept(): copy it if you keep it.
   */
  mask(): Uint32Array {
    this.ensureLive();
    if (!this.fresh) this.compute();
    return this.words;
  }

  /** Take the sampled token. A token the grammar rejects is a bug in whoever sampled it: we throw. */
  accept(token: number): void {
    this.ensureLive();
    const v = this.vocabulary;
    if (!Number.isInteger(token) || token < 0 || token >= v.vocabSize) {
      throw new RangeError(`token ${token} is outside the vocabulary (0..${v.vocabSize - 1})`);
    }
    if (this.terminated) throw new GrammarEngineError(`token ${token} came after the grammar had already ended`);
    const ok = v.runtime.runSync(
      () => this.matcher.acceptToken(token),
      (m) => new GrammarEngineError(`xgrammar failed accepting token ${token}: ${m}`),
    );
    if (!ok) {
      const text = JSON.stringify(v.tokenizer.tokenText(token));
      throw new GrammarEngineError(
        `the grammar rejected token ${token} ${text} after ${JSON.stringify(this.recentText())}: it was sampled although the mask did not allow it`,
      );
    }
    this.accepted++;
    this.fresh = false;
    const bytes = v.tokenizer.tokenBytes(token);
    this.remember(bytes);
    const next = utf8Run(this.utf8, bytes);
    // A token the mask forbade for UTF-8 reasons but the grammar took: carry on from a clean state.
    this.utf8 = next === UTF8_INVALID ? Utf8State.Ready : next;
    if (v.isStopToken(token) || this.matcher.isTerminated()) {
      this.terminated = true;
      return;
    }
    if (this.budget === undefined) return;
    // What is known to complete the output after this token: the rest of the plan, or what the budget
    // check found for it (each token that changes the structure had its own search there).
    const known = this.plan !== undefined && token === this.plan[0] ? this.plan.slice(1) : this.planAfter?.get(token);
    this.planAfter = undefined;
    this.replan(this.budget - this.accepted, known);
  }

  /**
   * The plan after a token, within the window of the budget's end: what the budget check (or the plan
   * itself) already knows completes the output, else a fresh search. Past the end (a caller that goes on
   * regardless) the known plan is kept: still the way out.
   */
  private replan(remaining: number, known: number[] | undefined): void {
    this.plan = remaining <= 0 || remaining <= this.window ? known : undefined;
    if (remaining > this.window || remaining <= 0) return;
    if (known === undefined) this.plan = closingTokens(this.vocabulary, this.matcher, this.utf8);
    const plan = this.plan;
    if (plan !== undefined) this.longestPlan = Math.max(this.longestPlan, plan.length);
    if (plan !== undefined && this.utf8 === Utf8State.Ready && !this.earlierPlans.some((p) => p.length === plan.length && p.every((t, i) => t === plan[i]))) {
      this.earlierPlans = [...this.earlierPlans, plan].sort((a, b) => a.length - b.length).slice(0, EARLIER_PLANS);
    }
  }

  /**
   * Generation should end: the grammar accepted an end token, or is complete with nothing but an end
   * token allowed next, or has reached a dead end (see `deadEnd`).
   */
  isDone(): boolean {
    if (this.terminated || this.disposed) return true;
    if (!this.fresh) this.compute();
    return this.onlyStop || this.failure !== undefined;
  }

  /**
   * Why generation cannot go on although the grammar is not complete: no token of this vocabulary can
   * continue it (the grammar needs a character the model cannot write). undefined when all is well.
   * Generation then ends with finishReason `stop` and incomplete output: the caller must report it.
   */
  get deadEnd(): string | undefined {
    return this.failure;
  }

  /** The grammar is complete (whatever follows can only be the end). */
  get complete(): boolean {
    return this.terminated || (this.fresh && this.onlyStop);
  }

  /**
   * Jump-forward decoding: tokens the grammar forces next, whatever the model would say (after `{"` of
   * a schema with one required property, its name and `": `). At most `limit` tokens. Pure: the
   * constraint does not advance; the engine feeds the tokens it takes through accept(), like sampled
   * ones, in order, and may take fewer (a prefix). Empty when the next token is a real choice.
   *
   * The forced text is tokenized greedily, longest vocabulary entry first, and every token is checked
   * against the grammar; the tokenization may differ from what the tokenizer would make of the text.
   */
  forcedTokens(limit = 32): number[] {
    this.ensureLive();
    if (this.terminated || limit <= 0) return [];
    const forced = this.forcedText();
    if (forced.length === 0) return [];
    // Near the end of the budget the forced text is taken as the plan spells it, so the rest of the plan
    // still completes the output: another tokenization could cost a token more.
    if (this.plan !== undefined) return this.planWithin(new TextEncoder().encode(forced), limit);
    return tokenizeAccepted(this.vocabulary, this.matcher, forced, limit).tokens;
  }

  /** The plan's first tokens whose bytes lie within `forced`, at most `limit`. */
  private planWithin(forced: Uint8Array, limit: number): number[] {
    const out: number[] = [];
    let at = 0;
    for (const t of this.plan!) {
      const bytes = this.vocabulary.tokenizer.tokenBytes(t);
      if (out.length >= limit || at + bytes.length > forced.length || bytes.some((b, i) => b !== forced[at + i])) break;
      out.push(t);
      at += bytes.length;
    }
    return out;
  }

  /** The text the grammar forces next (what forcedTokens() tokenizes); '' when the next step is a choice. */
  forcedText(): string {
    this.ensureLive();
    if (this.terminated) return '';
    return this.vocabulary.runtime.runSync(
      () => this.matcher.findJumpForwardString(),
      (m) => new GrammarEngineError(`xgrammar failed finding the forced string: ${m}`),
    );
  }

  /** Free the matcher's wasm memory now (it is freed on garbage collection otherwise). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    orphans.unregister(this);
    this.matcher.dispose();
  }

  private ensureLive(): void {
    if (this.disposed) throw new GrammarEngineError('the grammar constraint was used after dispose()');
  }

  private compute(): void {
    const v = this.vocabulary;
    const vec = v.runtime.runSync(
      () => this.handle.GetNextTokenBitmask(v.vocabSize),
      (m) => new GrammarEngineError(`xgrammar failed computing the token mask: ${m}`),
    );
    const words = this.words;
    const n = words.length;
    try {
      for (let i = 0; i < n; i++) words[i] = vec.get(i);
    } finally {
      vec.delete();
    }
    // xgrammar sets the bits past the vocabulary; they name no token.
    const extra = n * 32 - v.vocabSize;
    if (extra > 0) words[n - 1] &= 0xffffffff >>> extra;
    this.guard.apply(words, this.utf8);
    if (this.plan !== undefined && this.budget !== undefined) this.restrictToBudget(words, this.budget - this.accepted);
    else if (this.budget !== undefined && this.budget - this.accepted <= 0) this.endIfPossible(words);
    let any = 0;
    let beyondStop = 0;
    for (let i = 0; i < n; i++) {
      any |= words[i];
      beyondStop |= words[i] & ~this.stopMask[i];
    }
    this.fresh = true;
    this.onlyStop = any !== 0 && beyondStop === 0;
    if (any === 0 && !this.matcher.isTerminated()) {
      this.failure = `no token of this model's vocabulary can continue the grammar after ${JSON.stringify(this.recentText())}`;
    }
  }

  /**
   * Near the end of the budget: only tokens after which a completion still fits in what is left; once
   * only the plan fits (or nothing does: the budget is below the shortest answer), only the plan's next
   * token, and after its last, only the end.
   */
  private restrictToBudget(words: Uint32Array, remaining: number): void {
    const plan = this.plan!;
    if (plan.length > 0) {
      const t = plan[0];
      if (!(words[t >>> 5] & (1 << (t & 31)))) {
        this.plan = undefined; // the grammar disagrees with the plan: drop it (no guarantee from here)
        return;
      }
    }
    if (plan.length < remaining) {
      // Checking every token costs about 2 µs each (a 32000-token vocabulary: ~60 ms a step); the check
      // stops at its deadline (BUDGET_CHECK_MS) and drops the tokens it did not reach, which keeps the
      // guarantee and bounds the step.
      this.planAfter = budgetFilter(this.vocabulary, this.matcher, words, plan, this.earlierPlans, this.utf8, remaining);
    } else if (plan.length > 0) {
      const t = plan[0];
      words.fill(0);
      words[t >>> 5] = 1 << (t & 31);
    } else {
      for (let i = 0; i < words.length; i++) words[i] &= this.stopMask[i];
    }
  }

  /**
   * The budget is spent and no plan is in hand (it was dropped on the way): if the grammar may end here,
   * end it, so a complete answer is not reported as cut off.
   */
  private endIfPossible(words: Uint32Array): void {
    let stops = 0;
    for (let i = 0; i < words.length; i++) stops |= words[i] & this.stopMask[i];
    if (stops !== 0) for (let i = 0; i < words.length; i++) words[i] &= this.stopMask[i];
  }

  private remember(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    const joined = new Uint8Array(Math.min(TAIL_BYTES, this.tail.length + bytes.length));
    const all = new Uint8Array(this.tail.length + bytes.length);
    all.set(this.tail);
    all.set(bytes, this.tail.length);
    joined.set(all.subarray(all.length - joined.length));
    this.tail = joined;
  }

  private recentText(): string {
    return new TextDecoder().decode(this.tail);
  }
}
