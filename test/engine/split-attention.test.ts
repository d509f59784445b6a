/**
 * Split attention on the GPU kernels (EngineOptions.splitAttentionFrom, flash-decoding): once a step's
 * longest sequence attends to enough positions, each (token, head) pair's positions are spread over
 * several workgroups and merged by a combine pass. Decoding past 256 positions, with two sequences at
 * different lengths in one step, must give the tokens and log-probabilities of attention in one
 * workgroup a pair (which the parity tests hold to llama.cpp), with one dispatch a layer more. Runs on
 * SwiftShader with its caps marked as not software (the GPU kernels), as gpu-variants.test.ts does.
 */
import { describe, expect, it } from 'vitest';
import type { WebGpuEngine, EngineOptions } from '../../engine/engine.ts';
import { expectSameGreedy, gpuKernelsEngine, greedyRun } from '../helpers/engine.ts';

const gpuEngine = (opts: EngineOptions) => gpuKernelsEngine('stories260K.gguf', { contextLength: 512, maxSequences: 2, prefixCache: false, ...opts });

describe('split attention on the GPU kernels (stories260K on SwiftShader as a GPU)', () => {
  it('decoding past 256 positions gives the unsplit tokens and log-probabilities, with a combine pass a layer', async () => {
    const split = await gpuEngine({});
    const whole = await gpuEngine({ splitAttentionFrom: false });
    // Two sequences in the same decode steps: 300 and 120 prompt tokens (ids of the model's own text).
    const base = split.tokenizer.encode('Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.');
    const prompt = (n: number) => Array.from({ length: n }, (_, i) => base[i % base.length]);
    const run = (engine: WebGpuEngine) => Promise.all([300, 120].map((n) => greedyRun(engine, prompt(n), 24)));
    expectSameGreedy(await run(split), await run(whole));
    // A decode step of one sequence at 300+ positions: embedding + 5 layers x (QKV with norm, attention
    // with RoPE and the KV store, its combine pass, O, gate|up with norm, down) + head + two sampling passes.
    await greedyRun(split, prompt(300), 3);
    expect(split.stats().lastStepDispatches).toBe(1 + 6 * 5 + 3);
    await greedyRun(whole, prompt(300), 3);
    expect(whole.stats().lastStepDispatches).toBe(1 + 5 * 5 + 3);
    // Below the threshold no step splits.
    await greedyRun(split, prompt(40), 3);
    expect(split.stats().lastStepDispatches).toBe(1 + 5 * 5 + 3);
  });
});
