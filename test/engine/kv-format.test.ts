/**
 * The engine's KV cache format (kernels/kv-format.ts): half precision on CPU rasterisers by default, as
 * llama.cpp's own default cache, f32 on request. Each agrees with llama.cpp run with the same cache type,
 * and the f16 cache holds twice the positions in the same memory.
 */
import { readFileSync } from 'node:fs';
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEngine } from '../../engine/node.ts';
import { sharedModel } from '../helpers/models.ts';
import { testContext } from '../helpers/gpu.ts';
import { largestProbDifference, llamaCppReference } from '../../bench/llama-oracle.ts';

const model = sharedModel('stories260K.gguf');
const fixtures = JSON.parse(readFileSync(new URL('../fixtures/llama-greedy.json', import.meta.url), 'utf8')) as Record<string, { promptTokens: number[] }[]>;
const PROMPTS = fixtures['stories260K.gguf'].slice(0, 3).map((f) => f.promptTokens);
const software = (await testContext()).caps.software;
const STEPS = 24;
let llama: Llama;

beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
});
afterAll(async () => {
  await llama?.dispose();
});

describe('KV cache format', () => {
  it.each([
    ['auto', 'F16'],
    ['f32', 'F32'],
  ] as const)('kvCache %s: greedy tokens and next-token probabilities agree with llama.cpp\'s %s cache', async (kvCache, theirs) => {
    const refs = await llamaCppReference(llama, model, PROMPTS, 512, STEPS, theirs);
    const engine = await loadEngine({ model, contextLength: 256, maxSequences: 2, kvCache });
    try {
      expect(engine.stats().kvFormat).toBe(kvCache === 'f32' || !software ? 'f32' : 'f16');
      for (const ref of refs) {
        const ours = await engine.generate({ tokens: ref.prompt, maxTokens: STEPS, temperature: 0, stopAtEndOfGeneration: false }).result;
        expect(ours.tokens, JSON.stringify(ref.prompt)).toEqual(ref.greedy);
        expect(await largestProbDifference(engine, ref)).toBeLessThan(0.01);
      }
    } finally {
      await engine.dispose();
    }
  });

  it.skipIf(!software)('an f16 cache holds twice the positions in the same memory', async () => {
    const pages: number[] = [];
    for (const kvCache of ['f32', 'f16'] as const) {
      const engine = await loadEngine({ model, contextLength: 256, maxSequences: 8, kvCacheBytes: 640 * 1024, kvCache });
      try {
        expect(engine.stats().kvFormat).toBe(kvCache);
        expect(engine.stats().kvCacheBytes).toBeLessThanOrEqual(640 * 1024);
        pages.push(engine.stats().kvPages.total);
      } finally {
        await engine.dispose();
      }
    }
    expect(pages[1]).toBe(2 * pages[0]);
  });
});
