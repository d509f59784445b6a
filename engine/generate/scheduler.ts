/**
 * Continuous batching: every step carries one decode token for each running sequence plus prefill chunks
 * of waiting prompts, up to the runner's token budget. Sequences join and leave between steps; a request
 * is admitted when a cache slot and pages for its whole length are free, so it never stalls mid-way.
 */
import type { PageAllocator } from '../kv/page-allocator.ts';
import type { PrefixCache } from '../kv/prefix-cache.ts';
import { sampleCandidates } from './candidate-sampler.ts';
import { needsCandidates } from './options.ts';
import { Sequence, type StopReason } from './sequence.ts';
import type { StepRunner, SubmittedStep } from './step.ts';
import { AsyncLock } from './lock.ts';
import { NO_TOKEN } from '../../kernels/sampling/sample.ts';
import type { TokenConstraint } from '../types.ts';

export class Scheduler {
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  private looping = false;
  private looped: Promise<void> = Promise.resolve();
  private readonly rowSeq: Sequence[] = [];
  /** Constraints pinned for the step being built and run (see TokenConstraint.hold). */
  private readonly held: TokenConstraint[] = [];
  /** Sequences left out of the step because their constraint's thread was busy. */
  private readonly notReady: Sequence[] = [];
  /**
   * Steps run, their wall time from one step's end to the next one's (or from its start after a pause),
   * and how much of that the device had no work: scheduling, encoding and readback between steps; how
   * many steps were submitted ahead of the step they follow (pipelined decode); and of the wall time, the
   * host's encoding up to the submit (hostMs, StepRunner.lastHostMs), the submit calls themselves
   * (submitMs, StepRunner.lastSubmitMs) and its waiting for the step's samples (waitMs): on a GPU, a step
   * whose wait is near zero is bound by the host. (Where submit runs the work itself, llvmpipe, that work
   * is in submitMs.)
   */
  readonly stepTiming = { steps: 0, ms: 0, deviceIdleMs: 0, pipelined: 0, hostMs: 0, submitMs: 0, waitMs: 0 };
  /** Held for each step; diagnostics (logits) take it to use the runner between steps. */
  readonly lock = new AsyncLock();
  /** Pipelined decode on or off (the constructor's `opts.pipeline`; the engine switches it). */
  pipeline: boolean;
  private readonly submitBlocks: boolean;

  constructor(
    private readonly runner: StepRunner,
    private readonly pages: PageAllocator,
    /** Called before each step so the page table reaches the GPU. */
    private readonly syncPages: () => void,
    /** Shares full KV pages between sequences by token prefix; undefined turns sharing off. */
    public prefixCache?: PrefixCache,
    opts: {
      /**
       * Pipelined decode (where the runner can submit without reading): while every running sequence
       * only decodes, step N+1 is submitted, its tokens copied from step N's samples on the GPU, before
       * step N is read back, so the device never waits for the host between steps.
       */
      pipeline?: boolean;
      /** queue.submit runs the work on the calling thread (llvmpipe): host time between steps is idle time. */
      submitBlocks?: boolean;
    } = {},
  ) {
    this.pipeline = opts.pipeline ?? false;
    this.submitBlocks = opts.submitBlocks ?? false;
  }

  get activeCount(): number {
    return this.running.length;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  submit(seq: Sequence): void {
    if (Math.ceil(seq.maxLength / this.pages.pageSize) > this.pages.numPages) {
      seq.fail(new Error(`a sequence of ${seq.maxLength} positions needs more KV cache pages than exist (${this.pages.numPages})`));
      return;
    }
    this.waiting.push(seq);
    this.kick();
  }

  /** Abort requested from outside: a waiting sequence ends now, a running one at the next step. */
  abort(seq: Sequence): void {
    seq.aborted = true;
    const i = this.waiting.indexOf(seq);
    if (i >= 0) {
      this.waiting.splice(i, 1);
      seq.finish('aborted');
    }
    this.kick();
  }

  private kick(): void {
    if (this.looping) return;
    this.looping = true;
    this.looped = this.loop().finally(() => {
      this.looping = false;
      if (this.waiting.length > 0 || this.running.length > 0) this.kick();
    });
  }

  /**
   * Resolves once no step runs and none is due: every result is settled, and a step submitted ahead
   * (pipelined decode) has been read. Batches started after it begin from the same state.
   */
  async whenIdle(): Promise<void> {
    while (this.looping) await this.looped;
  }

  private admit(): void {
    while (this.waiting.length > 0) {
      const seq = this.waiting[0];
      const slot = this.pages.acquireSlot();
      if (slot === undefined) return;
      // The cached run of the prompt's full pages, mapped first so that reserve() cannot evict them; the
      // prompt's last token is always computed, so the sampler has its logits. A page whose start goes on
      // matching is copied where the runner can copy rows; it keeps a reference of ours until then.
      const hit = (!seq.uncached && this.prefixCache?.lookup(seq.prompt, seq.prompt.length - 1, seq.adapter?.id, this.runner.copyKvRows !== undefined)) || { pages: [] };
      const partial = hit.partial;
      this.pages.share(slot, hit.pages);
      if (partial) this.pages.retain(partial.page);
      if (!this.pages.reserve(slot, seq.maxLength)) {
        if (partial) this.pages.unref(partial.page);
        this.pages.release(slot);
        return;
      }
      this.waiting.shift();
      seq.slot = slot;
      const full = hit.pages.length * this.pages.pageSize;
      seq.cached = seq.cachedPromptTokens = full + (partial?.tokens ?? 0);
      seq.pendingCopy = partial && { from: partial.page, to: this.pages.pageAt(slot, full), rows: partial.tokens };
      seq.listedPages = hit.pages.length;
      if (!seq.uncached) this.prefixCache?.recordLookup(seq.cachedPromptTokens, partial?.tokens);
      seq.admittedAt = performance.now();
      this.running.push(seq);
    }
  }

  private end(seq: Sequence, reason: StopReason): void {
    seq.finish(reason);
    this.release(seq);
  }

  private release(seq: Sequence): void {
    if (seq.pendingCopy) this.pages.unref(seq.pendingCopy.from);
    seq.pendingCopy = undefined;
    const i = this.running.indexOf(seq);
    if (i >= 0) this.running.splice(i, 1);
    if (seq.slot >= 0) this.pages.release(seq.slot);
    seq.slot = -1;
  }

  private async loop(): Promise<void> {
    // End of the previous step of this busy period: the time from there to the next submit is idle device time.
    let lastEnd: number | undefined;
    for (;;) {
      for (const seq of [...this.running]) if (seq.aborted) this.end(seq, 'aborted');
      this.admit();
      if (this.running.length === 0) return;
      try {
        const built = await this.lock.run(async () => {
          try {
            const begun = performance.now();
            if (!this.buildStep()) return false;
            this.syncPages();
            const runStart = performance.now();
            if (this.pipeline && this.runner.submit && this.canFollow(this.rowSeq)) {
              lastEnd = await this.runPipelined(lastEnd ?? begun);
              return true;
            }
            await this.runner.run();
            const runEnd = performance.now();
            const hostMs = this.runner.lastHostMs ?? 0;
            const submitMs = this.runner.lastSubmitMs ?? 0;
            // Read the results before releasing the runner to anyone else.
            this.collect(this.rowSeq);
            const end = performance.now();
            this.countStep(end - (lastEnd ?? begun), runStart - (lastEnd ?? begun) + hostMs + (end - runEnd), hostMs, submitMs, Math.max(0, runEnd - runStart - hostMs - submitMs));
            lastEnd = end;
            return true;
          } finally {
            for (const c of this.held.splice(0)) c.release?.();
          }
        });
        if (!built) {
          // Nothing could run: wait for a busy grammar thread rather than spin.
          if (this.notReady.length === 0) return;
          await Promise.race(this.notReady.map((seq) => seq.constraint!.whenReady?.() ?? Promise.resolve()));
        }
      } catch (e) {
        for (const seq of [...this.running]) {
          seq.fail(e);
          this.release(seq);
        }
      }
    }
  }

  /** Fill the runner with this step's tokens and rows; false if there was nothing to do. */
  private buildStep(): boolean {
    const r = this.runner;
    r.begin();
    this.rowSeq.length = 0;
    this.notReady.length = 0;
    let budget = r.maxTokensPerStep;
    // Decode first: running sequences must not starve behind long prompts. A decode chunk is the last
    // sampled token plus any tokens a constraint forced after it (jump-forward), sampled after the last.
    // (Copies: a sequence whose constraint fails leaves `running` mid-loop.)
    for (const seq of [...this.running]) {
      if (seq.inPrefill || seq.aborted || this.rowSeq.length >= r.maxRowsPerStep) continue;
      const tokens = seq.unwritten();
      if (tokens.length > budget || !this.hold(seq)) continue;
      const mask = this.maskOf(seq);
      if (mask === false) continue;
      this.assertWritable(seq, tokens.length);
      let last = -1;
      const adapter = seq.adapter?.slot ?? -1;
      tokens.forEach((t, i) => (last = r.addToken(t, seq.cached + i, seq.slot, adapter)));
      seq.pendingWrite = tokens.length;
      budget -= tokens.length;
      this.addRow(seq, last, mask);
    }
    // A step that decodes other sequences holds at most decodingStepTokens, so they keep their pace
    // while a long prompt is computed beside them; a step of prompts alone may fill maxTokensPerStep.
    const decoding = this.rowSeq.length > 0;
    const room = decoding ? Math.min(r.decodingStepTokens ?? r.maxTokensPerStep, r.maxTokensPerStep) : r.maxTokensPerStep;
    budget -= r.maxTokensPerStep - room;
    const chunk = Math.min(r.prefillChunkTokens ?? r.maxTokensPerStep, room);
    for (const seq of [...this.running]) {
      if (!seq.inPrefill || seq.aborted || budget <= 0) continue;
      // The rest of a prompt where it fits the step; else a chunk, within the chunk size less what the
      // step already holds, so a step is never longer than one chunk and its decode rows.
      const rest = seq.prompt.length - seq.cached;
      const n = rest <= budget ? rest : Math.min(rest, chunk - (room - budget));
      if (n <= 0) continue;
      const endsPrompt = seq.cached + n === seq.prompt.length;
      if (endsPrompt && (this.rowSeq.length >= r.maxRowsPerStep || !this.hold(seq))) continue;
      const mask = endsPrompt ? this.maskOf(seq) : null;
      if (mask === false) continue;
      this.assertWritable(seq, n);
      // Its first step copies the rows the prefix cache matched within a page; the step's work is queued
      // after the copy, and nothing admits (and so reuses a freed page) before the step is submitted.
      const copy = seq.pendingCopy;
      if (copy) {
        r.copyKvRows!(copy.from, copy.to, copy.rows);
        this.pages.unref(copy.from);
        seq.pendingCopy = undefined;
      }
      let last = -1;
      const adapter = seq.adapter?.slot ?? -1;
      for (let i = 0; i < n; i++) last = r.addToken(seq.prompt[seq.cached + i], seq.cached + i, seq.slot, adapter);
      budget -= n;
      seq.pendingWrite = n;
      if (endsPrompt) this.addRow(seq, last, mask);
    }
    return budget < room;
  }

  /**
   * The pages that positions `cached`... `cached + n - 1` of the sequence go to are its own: a page it
   * shares (a cached prefix, or its own page the prefix cache lists) is full and is never written again.
   */
  private assertWritable(seq: Sequence, n: number): void {
    const ps = this.pages.pageSize;
    for (let p = seq.cached - (seq.cached % ps); p < seq.cached + n; p += ps) {
      const page = this.pages.pageAt(seq.slot, p);
      if (this.pages.refCount(page) !== 1) throw new Error(`sequence ${seq.id} would write position ${Math.max(p, seq.cached)} into page ${page}, which is shared (${this.pages.refCount(page)} references)`);
    }
  }

  /** List the sequence's newly full pages (prompt and generated tokens written so far) in the prefix cache. */
  private listPages(seq: Sequence): void {
    const full = Math.floor(seq.cached / this.pages.pageSize);
    if (!this.prefixCache || seq.uncached || full <= seq.listedPages) return;
    const tokens = seq.cached <= seq.prompt.length ? seq.prompt : [...seq.prompt, ...seq.generated];
    this.prefixCache.insert(tokens, this.pages.pagesOfSlot(seq.slot).slice(0, full), seq.adapter?.id);
    seq.listedPages = full;
  }

  /** Pin the sequence's constraint for this step; false (and noted) if its thread is busy now. */
  private hold(seq: Sequence): boolean {
    const c = seq.constraint;
    if (!c?.hold) return true;
    if (!c.hold()) {
      this.notReady.push(seq);
      return false;
    }
    this.held.push(c);
    return true;
  }

  /**
   * The sequence's constraint mask for its next token, or false when the constraint failed: that
   * sequence ends with the error and the others go on.
   */
  private maskOf(seq: Sequence): Uint32Array | null | false {
    if (!seq.constraint) return null;
    try {
      return seq.constraint.mask();
    } catch (e) {
      seq.fail(e);
      this.release(seq);
      return false;
    }
  }

  private addRow(seq: Sequence, tokenIndex: number, mask: Uint32Array | null): void {
    const o = seq.options;
    this.runner.addRow(tokenIndex, {
      temperature: o.temperature,
      seed: seq.seed,
      counter: seq.generated.length,
      mask,
      penalties: seq.usesPenalties()
        ? { presence: o.presencePenalty, frequency: o.frequencyPenalty, repetition: o.repetitionPenalty, entries: seq.penaltyEntries() }
        : null,
      candidates: needsCandidates(o),
    });
    this.rowSeq.push(seq);
  }

  /**
   * Whether the step with `rows` can be followed by one fed from its samples on the GPU: every running
   * sequence decodes one token in it (no prompt left, no forced tokens) and nothing it needs comes from
   * the host (a constraint's mask, penalties from its history, top-k/top-p on the CPU), nothing waits to
   * be admitted, and each can take two more tokens (else the next step would surely be thrown away).
   */
  private canFollow(rows: readonly Sequence[]): boolean {
    if (this.waiting.length > 0 || rows.length === 0 || rows.length !== this.running.length) return false;
    return rows.every(
      (seq) =>
        !seq.finished &&
        !seq.aborted &&
        seq.pendingWrite === 1 &&
        !seq.constraint &&
        !needsCandidates(seq.options) &&
        !seq.usesPenalties() &&
        seq.generated.length + 2 <= seq.options.maxTokens &&
        seq.prompt.length + seq.generated.length + 2 <= seq.maxLength,
    );
  }

  /**
   * Steps submitted ahead of their readback while canFollow holds: submit step N (built), then N+1 from
   * N's samples, read N, and so on; the last one submitted is read before returning. A sequence that
   * ends at step N had a row in N+1 too: that row is dropped (its KV write lies in its own reserved pages,
   * past its end, and queue order puts it before any later owner's). Returns when the last step ended.
   */
  private async runPipelined(since: number): Promise<number> {
    const r = this.runner;
    const submit = () => r.submit!();
    const t = this.stepTiming;
    let rows = [...this.rowSeq];
    // Idle until the first step's work was handed over (scheduling, then its encoding: lastHostMs once it
    // is read). After it each step is queued before the one ahead of it is read, so a device that runs
    // work apart from the host is never without; where submit runs the work itself (llvmpipe), the
    // device is idle while the host encodes each step, so that still counts.
    const firstIdle = performance.now() - since;
    const inFlight: SubmittedStep[] = [await submit()];
    let first = true;
    let lastEnd = since;
    try {
      for (;;) {
        let nextRows: Sequence[] | undefined;
        if (this.canFollow(rows)) {
          r.begin();
          for (const [row, seq] of rows.entries()) {
            const token = r.addSampledToken!(row, seq.cached + seq.pendingWrite, seq.slot, seq.adapter?.slot ?? -1);
            const o = seq.options;
            r.addRow(token, { temperature: o.temperature, seed: seq.seed, counter: seq.generated.length + 1, mask: null, penalties: null, candidates: false });
          }
          inFlight.push(await submit());
          t.pipelined++;
          nextRows = rows;
        }
        const waitStart = performance.now();
        await inFlight.shift()!.read();
        const waitMs = performance.now() - waitStart;
        const hostMs = r.lastHostMs ?? 0;
        const idle = first || this.submitBlocks ? (first ? firstIdle : 0) + hostMs : 0;
        first = false;
        this.collect(rows);
        const end = performance.now();
        this.countStep(end - lastEnd, idle, hostMs, r.lastSubmitMs ?? 0, waitMs);
        lastEnd = end;
        if (!nextRows) return end;
        for (const seq of nextRows) if (!seq.finished) seq.pendingWrite = 1;
        rows = nextRows;
      }
    } finally {
      // A step still in flight after a failure is read (and dropped), so the runner has none unread.
      for (const step of inFlight) await step.read().catch(() => undefined);
    }
  }

  /** Add a step to stepTiming: its wall time, the part of it the device had no work, the host's encoding and submitting, and its wait for the samples. */
  private countStep(ms: number, idleMs: number, hostMs: number, submitMs: number, waitMs: number): void {
    const t = this.stepTiming;
    t.steps++;
    t.ms += ms;
    t.deviceIdleMs += idleMs;
    t.hostMs += hostMs;
    t.submitMs += submitMs;
    t.waitMs += waitMs;
  }

  /** Take a read step's samples; `rows` are its rows' sequences (one that has ended since is skipped). */
  private collect(rows: readonly Sequence[]): void {
    for (const seq of this.running) {
      seq.cached += seq.pendingWrite;
      seq.pendingWrite = 0;
      this.listPages(seq);
    }
    rows.forEach((seq, row) => {
      if (seq.finished) return;
      let { token, logprob } = this.runner.sampled(row);
      if (needsCandidates(seq.options)) {
        ({ token, logprob } = sampleCandidatesFor(this.runner, row, seq));
      }
      if (token === NO_TOKEN) {
        this.end(seq, 'constraint');
        return;
      }
      // A failure in one sequence's own bookkeeping (its constraint, say) ends that sequence only.
      try {
        const reason = seq.accept(token, logprob) ?? seq.acceptForced();
        if (reason) this.end(seq, reason);
      } catch (e) {
        seq.fail(e);
        this.release(seq);
      }
    });
  }
}

/** Top-k / top-p: pick among the GPU's candidates with the sequence's own seeded generator. */
function sampleCandidatesFor(runner: StepRunner, row: number, seq: Sequence): { token: number; logprob: number } {
  const cands = runner.candidates(row);
  if (cands.tokens.length === 0) return { token: NO_TOKEN, logprob: 0 };
  return sampleCandidates(cands, seq.options.topK, seq.options.topP, seq.random);
}
