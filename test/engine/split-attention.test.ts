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
import { gpuSplitAttentionFrom } from '../../engine/model/transformer.ts';
import { expectSameGreedy, gpuKernelsEngine, greedyRun, testEngine } from '../helpers/engine.ts';

// The prefix cache on: the first runs on each engine start empty, and the later ones that only count a
// decode step's dispatches take the 300-token prompt's pages from it (a 300-token prefill on SwiftShader
// takes ~9 s).
const gpuEngine = (opts: EngineOptions) => gpuKernelsEngine('stories260K.gguf', { contextLength: 512, maxSequences: 2, ...opts });

describe('split attention on the GPU kernels (stories260K on SwiftShader as a GPU)', () => {
  it('splits from 256 positions for models of 16 MiB of weights a layer or more, from 2048 below (host-bound steps)', () => {
    // Llama-3.2-1B Q8_0 about 80 MB a layer, SmolLM2-135M Q8_0 about 4.8 MB, stories260K 1 MB in all.
    expect(gpuSplitAttentionFrom(80e6)).toBe(256);
    expect(gpuSplitAttentionFrom(16 * 2 ** 20)).toBe(256);
    expect(gpuSplitAttentionFrom(4.8e6)).toBe(2048);
    expect(gpuSplitAttentionFrom(2e5)).toBe(2048);
  });

  it('decoding past 256 positions gives the unsplit tokens and log-probabilities, with a combine pass a layer', async () => {
    // stories260K is a small model: its default would split from 2048 positions, past its context.
    const split = await gpuEngine({ splitAttentionFrom: 256 });
    const whole = await gpuEngine({ splitAttentionFrom: false });
    // Two sequences in the same decode steps: 300 and 120 prompt tokens (ids of the model's own text).
    const base = split.tokenizer.encode('Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.');
    const prompt = (n: number) => Array.from({ length: n }, (_, i) => base[i % base.length]);
    const run = (engine: WebGpuEngine) => Promise.all([300, 120].map((n) => greedyRun(engine, prompt(n), 8)));
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
    // By default this small model's step at 300+ positions does not split either.
    const byDefault = await gpuEngine({});
    await greedyRun(byDefault, prompt(300), 3);
    expect(byDefault.stats().lastStepDispatches).toBe(1 + 5 * 5 + 3);
  });
});

/**
 * The same on a CPU rasteriser (attention-serial-split.wgsl, where GpuCaps.orderedAtomics): from 128
 * positions a decode step's pairs are split over invocations and merged by the last one, with no
 * dispatch added; the tokens and log-probabilities are the unsplit kernel's.
 */
const cpu = await testEngine('stories260K.gguf', { contextLength: 512, maxSequences: 2, prefixCache: false });
describe.skipIf(!cpu.stats().adapter.includes('llvmpipe'))('split attention on a CPU rasteriser (stories260K on llvmpipe)', () => {
  const kernels = async (engine: WebGpuEngine, tokens: number[]) => (await engine.profileLastStep({ tokens, maxTokens: 3, temperature: 0, stopAtEndOfGeneration: false })).kernels.map((k) => k.label);

  it('decoding past 128 positions gives the unsplit tokens and log-probabilities in as many dispatches, splitting only there', async () => {
    const whole = await testEngine('stories260K.gguf', { contextLength: 512, maxSequences: 2, prefixCache: false, splitAttentionFrom: false });
    const base = cpu.tokenizer.encode('Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.');
    const prompt = (n: number) => Array.from({ length: n }, (_, i) => base[i % base.length]);
    const run = (engine: WebGpuEngine) => Promise.all([300, 120].map((n) => greedyRun(engine, prompt(n), 8)));
    // The heads go to the O product as int8 (llama.cpp's activation quantization): a sum in another order
    // may round a value to its neighbouring quant, so log-probabilities are held to 1e-3, not 1e-4.
    expectSameGreedy(await run(cpu), await run(whole), 1e-3);
    expect((await kernels(cpu, prompt(300))).some((l) => l.startsWith('attention-serial-split'))).toBe(true);
    const dispatches = cpu.stats().lastStepDispatches;
    expect((await kernels(whole, prompt(300))).some((l) => l.startsWith('attention-serial-split'))).toBe(false);
    expect(whole.stats().lastStepDispatches).toBe(dispatches);
    expect((await kernels(cpu, prompt(40))).some((l) => l.startsWith('attention-serial-split'))).toBe(false);
  });
});
