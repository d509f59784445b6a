/**
 * The last layer on the sampled rows only (Transformer.pruneLastLayer): steps mixing several prompts'
 * chunks with decoding sequences give the same tokens, and log-probabilities within float noise, as
 * steps that run every token through the last layer; and both keep llama.cpp's greedy tokens (parity
 * tests). Each sampled row must keep its own token's Q, residual row, position and sequence. The same
 * with the GPU kernels (SwiftShader marked as not software, as in gpu-variants.test.ts), where a few
 * sampled rows take the norm-fused matrix-vector products after the move.
 */
import { describe, expect, it } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import type { GenerateOptions } from '../../engine/types.ts';
import { expectSameGreedy, gpuKernelsEngine, testEngine } from '../helpers/engine.ts';

const PROMPTS = ['Once upon a time', 'The little dog saw a big red ball in the park and', 'Lily', 'One day, a big bear wanted to eat some honey. He'];

/** Tokens and their log-probabilities, as streamed. */
async function collect(engine: WebGpuEngine, opts: GenerateOptions) {
  const out = { tokens: [] as number[], logprobs: [] as number[] };
  for await (const c of engine.generate(opts)) {
    out.tokens.push(...c.tokens);
    out.logprobs.push(...c.logprobs);
  }
  return out;
}

/** The prompts started together on an idle engine, so their prompts and decoding share steps. */
async function together(engine: WebGpuEngine) {
  await engine.whenIdle();
  const runs = PROMPTS.map((prompt, i) => collect(engine, { prompt, maxTokens: 10 + 3 * i, temperature: 0, stopAtEndOfGeneration: false }));
  return Promise.all(runs);
}

describe('last layer on the sampled rows only', () => {
  it('mixed steps of prompts and decoding give the same tokens and log-probabilities as the whole last layer', async () => {
    const pruned = await together(await testEngine('stories260K.gguf', { maxSequences: 4 }));
    const whole = await together(await testEngine('stories260K.gguf', { maxSequences: 4, pruneLastLayer: false }));
    expectSameGreedy(pruned, whole);
  });

  it('a prompt alone: one step, the same first token and log-probability', async () => {
    for (const maxSequences of [1, 4]) {
      const a = await collect(await testEngine('stories260K.gguf', { maxSequences }), { prompt: PROMPTS[3], maxTokens: 1, temperature: 0 });
      const b = await collect(await testEngine('stories260K.gguf', { maxSequences, pruneLastLayer: false }), { prompt: PROMPTS[3], maxTokens: 1, temperature: 0 });
      expect(a.tokens).toEqual(b.tokens);
      expect(Math.abs(a.logprobs[0] - b.logprobs[0])).toBeLessThan(1e-4);
    }
  });

  it('on the GPU kernels too', async () => {
    const load = (pruneLastLayer: boolean) => gpuKernelsEngine('stories260K.gguf', { contextLength: 256, maxSequences: 4, pruneLastLayer });
    const pruned = await together(await load(true));
    const whole = await together(await load(false));
    expectSameGreedy(pruned, whole);
  });
});
