/**
 * The prefix cache on the real engine: greedy outputs are the same with it on and off (prompts sharing a
 * long prefix, run one after another and at once), later requests report the cached tokens, a chat
 * follow-up reuses the pages of the previous turn's answer too, and under page pressure the cache gives
 * pages back rather than refusing requests.
 */
import { describe, expect, it } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import type { GenerateOptions, GenerationResult } from '../../engine/types.ts';
import { testEngine } from '../helpers/engine.ts';

const PREFIX =
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. ' +
  'One day, she saw a big red ball under a tree. She ran to the ball and picked it up. Her mom said, "Lily, be careful!" ' +
  'Lily smiled and said, "I will, mom." Then a small dog came and wanted to play too. ';
const SUFFIXES = ['The dog', 'Lily threw the ball and', 'They played until the sun', 'Her friend Tom came and said,', 'At night, Lily'];

const on = () => testEngine('stories260K.gguf', { grammars: 'in-process' });
const off = () => testEngine('stories260K.gguf', { grammars: 'in-process', prefixCache: false });

async function gen(engine: WebGpuEngine, opts: GenerateOptions): Promise<GenerationResult> {
  return engine.generate({ maxTokens: 24, temperature: 0, stopAtEndOfGeneration: false, ...opts }).result;
}

/** Tokens and their log-probabilities, streamed. */
async function genWithLogprobs(engine: WebGpuEngine, opts: GenerateOptions): Promise<{ result: GenerationResult; logprobs: number[] }> {
  const g = engine.generate({ maxTokens: 24, temperature: 0, stopAtEndOfGeneration: false, ...opts });
  const logprobs: number[] = [];
  for await (const c of g) logprobs.push(...c.logprobs);
  return { result: await g.result, logprobs };
}

describe('prefix cache (engine)', () => {
  it('gives the same greedy output as no cache, one request after another, and reports the cached tokens', async () => {
    const [a, b] = [await on(), await off()];
    const prefixTokens = a.tokenizer.encode(PREFIX).length;
    expect(prefixTokens).toBeGreaterThan(100);
    const earlier: number[][] = [];
    const commonPrefix = (x: number[], y: number[]) => {
      let n = 0;
      while (n < Math.min(x.length, y.length) && x[n] === y[n]) n++;
      return n;
    };
    for (const [i, s] of SUFFIXES.entries()) {
      const tokens = a.tokenizer.encode(PREFIX + s);
      const { result: withCache, logprobs: lpCache } = await genWithLogprobs(a, { prompt: PREFIX + s });
      const { result: without, logprobs: lpPlain } = await genWithLogprobs(b, { prompt: PREFIX + s });
      expect(withCache.tokens, s).toEqual(without.tokens);
      // Prefill starting at a page boundary changes which tokens share a step (and the matvec/tiled choice
      // for short remainders), not what each token's row computes: on llvmpipe and SwiftShader the
      // log-probabilities are bitwise equal today; allow float noise should a kernel start to depend on it.
      lpCache.forEach((lp, j) => expect(lp).toBeCloseTo(lpPlain[j], 4));
      expect(without.timings.cachedPromptTokens).toBe(0);
      expect(without.timings.prefillTokens).toBe(without.promptTokens);
      expect(withCache.timings.cachedPromptTokens + withCache.timings.prefillTokens).toBe(withCache.promptTokens);
      // Token by token: the longest common prefix with an earlier prompt (whose pages, prompt and answer,
      // are all listed that far), full pages shared and the rest of the last one copied.
      expect(withCache.timings.cachedPromptTokens).toBe(Math.min(tokens.length - 1, Math.max(0, ...earlier.map((e) => commonPrefix(e, tokens)))));
      if (i > 0) expect(withCache.timings.prefillTokens).toBeLessThan(withCache.promptTokens - 100);
      earlier.push(tokens);
    }
    // The very same prompt again: all but its last token is cached.
    const again = await gen(a, { prompt: PREFIX + SUFFIXES[0] });
    expect(again.timings.prefillTokens).toBe(1);
    expect(again.tokens).toEqual((await gen(b, { prompt: PREFIX + SUFFIXES[0] })).tokens);
    const stats = a.stats().prefixCache!;
    expect(stats.hits).toBeGreaterThanOrEqual(SUFFIXES.length);
    expect(stats.copiedTokens).toBeGreaterThan(0);
    expect(a.stats().prefixCache).not.toBeNull();
    expect(b.stats().prefixCache).toBeNull();
  });

  it('gives the same greedy output as no cache when the requests run at once', async () => {
    const [a, b] = [await on(), await off()];
    const prompts = SUFFIXES.map((s) => PREFIX + s.toUpperCase());
    const alone: number[][] = [];
    for (const p of prompts) alone.push((await gen(b, { prompt: p })).tokens);
    // Cold: all admitted in one step, each computes the prefix (the cache keeps one copy of each page).
    const cold = await Promise.all(prompts.map((p) => gen(a, { prompt: p })));
    cold.forEach((r, i) => expect(r.tokens, prompts[i]).toEqual(alone[i]));
    // Warm: the prefix is cached now, every request at once starts after it.
    const warm = await Promise.all(prompts.map((p, i) => gen(a, { prompt: p, maxTokens: 24 - i })));
    warm.forEach((r, i) => {
      expect(r.tokens, prompts[i]).toEqual(alone[i].slice(0, 24 - i));
      expect(r.timings.cachedPromptTokens).toBeGreaterThan(100);
    });
    // Without the cache, the same at once.
    const together = await Promise.all(prompts.map((p) => gen(b, { prompt: p })));
    together.forEach((r, i) => expect(r.tokens).toEqual(alone[i]));
  });

  it('a follow-up turn reuses the pages of the previous answer, and matches no cache', async () => {
    const [a, b] = [await on(), await off()];
    const first = a.tokenizer.encode(PREFIX + 'Tom said');
    const turn1 = await gen(a, { tokens: first, maxTokens: 40 });
    expect(turn1.tokens).toEqual((await gen(b, { tokens: first, maxTokens: 40 })).tokens);
    const more = a.tokenizer.encode(' Then they went home.').slice(a.tokenizer.addBos ? 1 : 0);
    const second = [...first, ...turn1.tokens, ...more];
    const turn2 = await gen(a, { tokens: second });
    // Written by turn 1: its prompt and all its answer but the last token (never fed back).
    expect(turn2.timings.cachedPromptTokens).toBe(Math.floor((first.length + turn1.tokens.length - 1) / 16) * 16);
    expect(turn2.tokens).toEqual((await gen(b, { tokens: second })).tokens);
  });

  it('under page pressure the cache gives pages back: every request runs, outputs unchanged', async () => {
    // 24 pages of 16 positions (5 layers × K and V × 16 × 32 floats = 20 KiB a page), 2 slots of 256.
    const opts = { grammars: 'in-process' as const, contextLength: 256, maxSequences: 2, kvCacheBytes: 24 * 20480 };
    const a = await testEngine('stories260K.gguf', opts);
    const b = await testEngine('stories260K.gguf', { ...opts, prefixCache: false });
    // Different long prompts: each leaves ~7 pages in the cache, so the pool runs out by the fourth.
    const prompts = SUFFIXES.map((s, i) => `${s} ${PREFIX.slice(i * 7)}`);
    for (const p of prompts) {
      const r = await gen(a, { prompt: p });
      expect(r.tokens, p).toEqual((await gen(b, { prompt: p })).tokens);
    }
    const stats = a.stats().prefixCache!;
    expect(stats.evicted).toBeGreaterThan(0);
    // And two at once, each needing most of the pool's free pages.
    const both = await Promise.all(prompts.slice(0, 2).map((p) => gen(a, { prompt: p, maxTokens: 100 })));
    for (const [i, r] of both.entries()) expect(r.tokens).toEqual((await gen(b, { prompt: prompts[i], maxTokens: 100 })).tokens);
  });
});
