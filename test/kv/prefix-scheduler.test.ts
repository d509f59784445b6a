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

/** Samples token (position + 1) % 50 + 1000 after each row; checks every write goes to a page only its sequence holds. */
class FakeRunner implements StepRunner {
  readonly maxTokensPerStep = 40;
  readonly maxRowsPerStep = 4;
  private step: { token: number; position: number; slot: number }[] = [];
  private rows: number[] = [];
  readonly writes: { token: number; position: number; slot: number; refs: number }[] = [];
  constructor(private readonly pages: PageAllocator) {}
  begin(): void {
    this.step = [];
    this.rows = [];
  }
  addToken(token: number, position: number, slot: number): number {
    this.step.push({ token, position, slot });
    return this.step.length - 1;
  }
  addRow(tokenIndex: number, _spec: SampleRowSpec): number {
    this.rows.push(tokenIndex);
    return this.rows.length - 1;
  }
  async run(): Promise<void> {
    await new Promise((r) => setImmediate(r)); // a step takes a turn of the event loop, as on a GPU
    for (const t of this.step) this.writes.push({ ...t, refs: this.pages.refCount(this.pages.pageAt(t.slot, t.position)) });
  }
  sampled(row: number) {
    const t = this.step[this.rows[row]];
    return { token: 1000 + ((t.position + 1) % 50), logprob: 0 };
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

function setup(prefix: boolean, numPages = 64) {
  const pages = new PageAllocator(numPages, PS, 4, 16);
  const runner = new FakeRunner(pages);
  const cache = prefix ? new PrefixCache(pages) : undefined;
  if (cache) pages.reclaimer = (n) => void cache.evict(n);
  const scheduler = new Scheduler(runner, pages, () => pages.takeDirty(), cache);
  let id = 1;
  const run = (prompt: number[], maxTokens = 6): Promise<GenerationResult> => {
    const seq = new Sequence(id++, prompt, resolveOptions({ maxTokens, temperature: 0 }), prompt.length + maxTokens, tokenizer, undefined);
    scheduler.submit(seq);
    return seq.queue.result;
  };
  return { pages, runner, cache, run };
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
    expect(b.tokens).toEqual(a.tokens.map((_, i) => 1000 + ((73 + i) % 50)));
    expect(cache!.stats()).toMatchObject({ lookups: 2, hits: 1, hitTokens: 64 });
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
    for (const prefix of [false, true]) {
      const { pages, cache, run } = setup(prefix, 24);
      const res: GenerationResult[] = [];
      for (const p of prompts) res.push(await run(p, 30));
      res.push(...(await Promise.all(prompts.map((p) => run(p, 30)))));
      outs.push(res);
      cache?.clear();
      expect(pages.freePages).toBe(24);
    }
    expect(outs[1].map((r) => r.tokens)).toEqual(outs[0].map((r) => r.tokens));
    expect(outs[0].every((r) => r.timings.cachedPromptTokens === 0)).toBe(true);
    expect(outs[1].some((r) => r.timings.cachedPromptTokens > 0)).toBe(true);
  });
});
