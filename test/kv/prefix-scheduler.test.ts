/**
 * The scheduler with the prefix cache, on a fake step runner (no GPU): where prefill starts after a hit,
 * that no token is ever written into a shared page, which pages get listed, and that turning the cache
 * off changes nothing but the work done.
 */
import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../../engine/generate/options.ts';
import { Scheduler } from '../../engine/generate/scheduler.ts';
import { Sequence } from '../../engine/generate/sequence.ts';
import type { SampleRowSpec, StepRunner } from '../../engine/generate/step.ts';
import { PageAllocator } from '../../engine/kv/page-allocator.ts';
import { PrefixCache } from '../../engine/kv/prefix-cache.ts';
import type { Tokenizer } from '../../engine/tokenizer/types.ts';
import type { GenerationResult } from '../../engine/types.ts';

const PS = 16;

/**
 * Holds what each KV page's rows hold (the token written there, or copied with copyKvRows where `copies`)
 * and samples from what a row's token reads back: a token hashed from its whole context, rows 0 .. its
 * position through its page table. So an output changes if any row it reads holds the wrong token.
 * Also checks every write goes to a page only its sequence holds.
 */
class FakeRunner implements StepRunner {
  readonly maxTokensPerStep = 40;
  readonly maxRowsPerStep = 4;
  private step: { token: number; position: number; slot: number }[] = [];
  private rows: number[] = [];
  private copies: { from: number; to: number; rows: number }[] = [];
  private contexts: number[][] = [];
  private readonly kv = new Map<number, number[]>();
  readonly writes: { token: number; position: number; slot: number; refs: number }[] = [];
  readonly copied: { from: number; to: number; rows: number }[] = [];
  copyKvRows?: (from: number, to: number, rows: number) => void;
  constructor(
    private readonly pages: PageAllocator,
    copies: boolean,
  ) {
    if (copies) this.copyKvRows = (from, to, rows) => void this.copies.push({ from, to, rows });
  }
  begin(): void {
    this.step = [];
    this.rows = [];
    this.copies = [];
  }
  addToken(token: number, position: number, slot: number): number {
    this.step.push({ token, position, slot });
    return this.step.length - 1;
  }
  addRow(tokenIndex: number, _spec: SampleRowSpec): number {
    this.rows.push(tokenIndex);
    return this.rows.length - 1;
  }
  private page(p: number): number[] {
    if (!this.kv.has(p)) this.kv.set(p, []);
    return this.kv.get(p)!;
  }
  async run(): Promise<void> {
    await new Promise((r) => setImmediate(r)); // a step takes a turn of the event loop, as on a GPU
    for (const c of this.copies) {
      const from = this.page(c.from);
      const to = this.page(c.to);
      for (let i = 0; i < c.rows; i++) to[i] = from[i];
      this.copied.push(c);
    }
    for (const t of this.step) {
      const page = this.pages.pageAt(t.slot, t.position);
      this.writes.push({ ...t, refs: this.pages.refCount(page) });
      this.page(page)[t.position % PS] = t.token;
    }
    this.contexts = this.rows.map((i) => {
      const t = this.step[i];
      return Array.from({ length: t.position + 1 }, (_, p) => this.kv.get(this.pages.pageAt(t.slot, p))?.[p % PS] ?? -1);
    });
  }
  sampled(row: number) {
    return { token: 1000 + this.contexts[row].reduce((h, token, p) => (h * 31 + token * (p + 1)) % 997, 7) % 50, logprob: 0 };
  }
  candidates(): never {
    throw new Error('no candidates');
  }
}

const tokenizer = {
  streamDecoder: () => ({ push: (id: number) => `<${id}>`, flush: () => '' }),
  isControl: () => false,
  isEndOfGeneration: () => false,
} as unknown as Tokenizer;

function setup(prefix: boolean, numPages = 64, copies = false) {
  const pages = new PageAllocator(numPages, PS, 4, 16);
  const runner = new FakeRunner(pages, copies);
  const cache = prefix ? new PrefixCache(pages) : undefined;
  if (cache) pages.reclaimer = (n) => void cache.evict(n);
  const scheduler = new Scheduler(runner, pages, () => pages.takeDirty(), cache);
  let id = 1;
  const run = (prompt: number[], maxTokens = 6): Promise<GenerationResult> => {
    const seq = new Sequence(id++, prompt, resolveOptions({ maxTokens, temperature: 0 }), prompt.length + maxTokens, tokenizer, undefined);
    scheduler.submit(seq);
    return seq.queue.result;
  };
  /** run(), and the sequence, to abort through the scheduler. */
  const start = (prompt: number[], maxTokens = 6) => {
    const seq = new Sequence(id++, prompt, resolveOptions({ maxTokens, temperature: 0 }), prompt.length + maxTokens, tokenizer, undefined);
    scheduler.submit(seq);
    return { seq, result: seq.queue.result.catch((e: unknown) => e), abort: () => scheduler.abort(seq) };
  };
  return { pages, runner, cache, run, start };
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe('scheduler with the prefix cache', () => {
  it('starts prefill after the cached pages and never writes into a shared page', async () => {
    const { runner, cache, run } = setup(true);
    const system = range(1, 70); // four full pages and 6 tokens
    const a = await run([...system, 500, 501]);
    expect(a.timings.cachedPromptTokens).toBe(0);
    expect(a.timings.prefillTokens).toBe(72);
    runner.writes.length = 0;
    const b = await run([...system, 600, 601, 602]);
    expect(b.timings.cachedPromptTokens).toBe(64);
    expect(b.timings.prefillTokens).toBe(9);
    // b's first write is at position 64, and no write of b touched a page with another holder.
    expect(runner.writes[0].position).toBe(64);
    expect(runner.writes.every((w) => w.refs === 1)).toBe(true);
    expect(b.tokens).toEqual((await setup(false).run([...system, 600, 601, 602])).tokens);
    expect(cache!.stats()).toMatchObject({ lookups: 2, hits: 1, hitTokens: 64, copiedTokens: 0 });
  });

  it('copies the rows of a listed page whose start the prompt matches, and starts after them', async () => {
    const { pages, runner, cache, run } = setup(true, 64, true);
    const system = range(1, 70); // four full pages and 6 tokens
    await run([...system, 500, 501], 20); // 91 positions written: page 4 (64..79) is full and listed
    runner.writes.length = 0;
    const b = await run([...system, 600, 601, 602]);
    expect(b.timings.cachedPromptTokens).toBe(70);
    expect(b.timings.prefillTokens).toBe(3);
    expect(runner.copied).toHaveLength(1);
    expect(runner.copied[0].rows).toBe(6);
    expect(runner.writes[0].position).toBe(70);
    expect(runner.writes.every((w) => w.refs === 1)).toBe(true);
    // What b read back through its page table (the copied rows included) is what it reads without the cache.
    expect(b.tokens).toEqual((await setup(false).run([...system, 600, 601, 602])).tokens);
    expect(cache!.stats()).toMatchObject({ lookups: 2, hits: 1, hitTokens: 70, copiedTokens: 6 });
    // The copy's source keeps only the cache's reference.
    expect(pages.refCount(runner.copied[0].from)).toBe(1);
  });

  it('drops the copy and its reference when a sequence ends before its first step', async () => {
    const { pages, runner, cache, run, start } = setup(true, 64, true);
    const system = range(1, 70);
    await run([...system, 500, 501], 20); // page 4 (64..79) listed
    // Two at once: the first fills the 40-token step, so the second waits admitted with its copy pending.
    const a = start([...system, 600, ...range(700, 40)]);
    const b = start([...system, 601, 602]);
    // b is admitted once a's first step is read, and a's prompt fills the next step too.
    while (b.seq.slot < 0) await new Promise((r) => setImmediate(r));
    expect(b.seq.pendingCopy).toBeDefined();
    const source = b.seq.pendingCopy!.from;
    expect(pages.refCount(source)).toBe(2); // the cache's, and b's until its copy (a's was made in its first step)
    b.abort();
    await a.result;
    await b.result;
    expect(b.seq.pendingCopy).toBeUndefined();
    expect(runner.copied).toHaveLength(1); // a's only
    expect(pages.refCount(source)).toBe(1);
    cache!.clear();
    expect(pages.freePages).toBe(64);
  });

  it('with copies, leaves exactly the last prompt token to compute when the whole prompt is cached', async () => {
    const { runner, run } = setup(true, 64, true);
    const p = range(1, 64);
    const first = await run(p, 20);
    runner.writes.length = 0;
    const again = await run(p, 20);
    expect(again.timings.cachedPromptTokens).toBe(63);
    expect(again.timings.prefillTokens).toBe(1);
    expect(runner.writes[0].position).toBe(63);
    expect(again.tokens).toEqual(first.tokens);
  });

  it('leaves the last prompt token to compute when the whole prompt is cached', async () => {
    const { runner, run } = setup(true);
    const p = range(1, 64); // exactly four pages
    await run(p, 20); // writes 64 + 19 positions: five full pages (prompt and answer)
    runner.writes.length = 0;
    const again = await run(p);
    expect(again.timings.cachedPromptTokens).toBe(48);
    expect(again.timings.prefillTokens).toBe(16);
    expect(runner.writes[0].position).toBe(48);
  });

  it('lists pages as they are written, so a request admitted later shares a running one’s prompt', async () => {
    const { runner, run } = setup(true);
    const system = range(1, 100);
    let done = false;
    const long = run([...system, 7], 40).then((r) => ((done = true), r));
    // The second request arrives once the first has written its prompt, while it decodes.
    while (runner.writes.length < 101) await new Promise((r) => setImmediate(r));
    const b = await run([...system, 8]);
    expect(done).toBe(false);
    expect(b.timings.cachedPromptTokens).toBe(96);
    expect((await long).completionTokens).toBe(40);
  });

  it('gives the same outputs with the cache off, and the pool is whole again afterwards', async () => {
    const prompts = [range(1, 50), [...range(1, 40), 3, 3], range(1, 50), [...range(1, 33), 9]];
    const outs: GenerationResult[][] = [];
    for (const [prefix, copies] of [[false, false], [true, false], [true, true]]) {
      const { pages, cache, run } = setup(prefix, 24, copies);
      const res: GenerationResult[] = [];
      for (const p of prompts) res.push(await run(p, 30));
      res.push(...(await Promise.all(prompts.map((p) => run(p, 30)))));
      outs.push(res);
      cache?.clear();
      expect(pages.freePages).toBe(24);
    }
    expect(outs[1].map((r) => r.tokens)).toEqual(outs[0].map((r) => r.tokens));
    expect(outs[2].map((r) => r.tokens)).toEqual(outs[0].map((r) => r.tokens));
    expect(outs[0].every((r) => r.timings.cachedPromptTokens === 0)).toBe(true);
    expect(outs[1].some((r) => r.timings.cachedPromptTokens > 0)).toBe(true);
    expect(outs[2].some((r) => r.timings.cachedPromptTokens % PS !== 0)).toBe(true);
  });
});
