/**
 * How a prompt is cut into steps (EngineOptions.maxTokensPerStep, prefillChunkTokens, decodingStepTokens): a
 * prompt whose rest fits a step's room goes whole, a longer one in chunks, a step that carries another
 * prompt stays within one chunk, and one that decodes other sequences within decodingStepTokens. Steps counted on the real engine; the greedy tokens do not depend on the cut.
 */
import { describe, expect, it } from 'vitest';
import { testEngine, greedyRun } from '../helpers/engine.ts';
import type { WebGpuEngine } from '../../engine/engine.ts';

const prompt = (n: number, seed = 1) => Array.from({ length: n }, (_, i) => 1 + ((i * 37 + seed * 11) % 400));

/** Steps the engine runs for `prompts` given at once, each generating one token (prefill steps only). */
async function prefillSteps(engine: WebGpuEngine, prompts: number[][]): Promise<number> {
  const before = engine.stats().steps.count;
  await Promise.all(prompts.map((tokens) => engine.generate({ tokens, maxTokens: 1, temperature: 0, stopAtEndOfGeneration: false }).result));
  return engine.stats().steps.count - before;
}

describe('prefill chunks', () => {
  it('takes a prompt that fits the step whole, a longer one in chunks, and gives the same tokens', async () => {
    const opts = { maxTokensPerStep: 24, prefillChunkTokens: 16, prefixCache: false, maxSequences: 2 } as const;
    const engine = await testEngine('stories260K.gguf', opts);
    expect(await prefillSteps(engine, [prompt(20)])).toBe(1); // 20 <= 24: whole
    expect(await prefillSteps(engine, [prompt(24)])).toBe(1);
    expect(await prefillSteps(engine, [prompt(40)])).toBe(2); // 16, then the rest (24) whole
    expect(await prefillSteps(engine, [prompt(41)])).toBe(3); // 16, 16, 9
    // Two prompts at once: the first fills the step past one chunk, so the second waits for the next.
    expect(await prefillSteps(engine, [prompt(20, 1), prompt(20, 2)])).toBe(2);

    const plain = await testEngine('stories260K.gguf', { maxTokensPerStep: 16, prefixCache: false });
    expect(await prefillSteps(plain, [prompt(20)])).toBe(2); // the default chunk is the whole step
    for (const n of [20, 40]) expect((await greedyRun(engine, prompt(n), 6)).tokens).toEqual((await greedyRun(plain, prompt(n), 6)).tokens);
  });

  it('keeps a step that decodes other sequences within decodingStepTokens; prompts alone fill the step', async () => {
    const engine = await testEngine('stories260K.gguf', { maxTokensPerStep: 24, decodingStepTokens: 10, prefixCache: false, maxSequences: 2 });
    expect(await prefillSteps(engine, [prompt(40)])).toBe(2); // alone: 24, then 16
    // Beside a sequence that decodes in every step, each step takes 10 - 1 = 9 of the prompt's tokens.
    const decoding = engine.generate({ tokens: prompt(4, 3), maxTokens: 60, temperature: 0, stopAtEndOfGeneration: false });
    const chunks = decoding[Symbol.asyncIterator]();
    await chunks.next(); // its first token: it decodes from here on
    const before = engine.stats().steps.count;
    await engine.generate({ tokens: prompt(40), maxTokens: 1, temperature: 0, stopAtEndOfGeneration: false }).result;
    expect(engine.stats().steps.count - before).toBeGreaterThanOrEqual(5); // ceil(40 / 9)
    await decoding.result;
  });

  it('on llvmpipe by default, a prompt alone goes in steps of 256 tokens, beside decoding sequences in steps of 96', async () => {
    const engine = await testEngine('stories260K.gguf', { prefixCache: false, maxSequences: 2 });
    const llvmpipe = engine.stats().adapter === 'llvmpipe';
    // SwiftShader (no blocking submit) keeps steps of 96 and chunks of 64.
    expect(await prefillSteps(engine, [prompt(300)])).toBe(llvmpipe ? 2 : 5);
  });

  it('refuses a chunk size that is not a positive whole number', async () => {
    await expect(testEngine('stories260K.gguf', { prefillChunkTokens: 0 })).rejects.toThrow(/prefillChunkTokens must be a positive whole number \(got 0\)/);
    await expect(testEngine('stories260K.gguf', { maxTokensPerStep: 2.5 })).rejects.toThrow(/maxTokensPerStep must be a positive whole number/);
    await expect(testEngine('stories260K.gguf', { decodingStepTokens: -1 })).rejects.toThrow(/decodingStepTokens must be a positive whole number \(got -1\)/);
  });
});
