/**
 * Tiled prefill attention on the GPU kernels (EngineOptions.tiledAttention, kernels/attention-tiled.wgsl):
 * steps holding many tokens of each sequence run attention in tiles of consecutive tokens, K and V of
 * each position staged once for a tile's tokens and query heads. Two prompts prefilled in the same
 * steps (tiles that span both sequences) must give the tokens and log-probabilities of a workgroup per
 * token and head, which the parity tests hold to llama.cpp; decode steps keep the per-head kernel. Runs on
 * SwiftShader with its caps marked as not software (the GPU kernels), as gpu-variants.test.ts does.
 */
import { describe, expect, it } from 'vitest';
import type { WebGpuEngine, EngineOptions } from '../../engine/engine.ts';
import { expectSameGreedy, gpuKernelsEngine, greedyRun } from '../helpers/engine.ts';

const gpuEngine = (opts: EngineOptions) => gpuKernelsEngine('stories260K.gguf', { contextLength: 512, maxSequences: 2, prefixCache: false, tiledAttentionMinWorkgroups: 0, ...opts });

describe('tiled prefill attention on the GPU kernels (stories260K on SwiftShader as a GPU)', () => {
  it('two prompts prefilled together give the untiled tokens and log-probabilities; prefill steps run the tiled kernel, decode steps not', async () => {
    const tiled = await gpuEngine({});
    const untiled = await gpuEngine({ tiledAttention: false });
    const base = tiled.tokenizer.encode('Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.');
    const prompt = (n: number) => Array.from({ length: n }, (_, i) => base[i % base.length]);
    const run = (engine: WebGpuEngine) => Promise.all([150, 61].map((n) => greedyRun(engine, prompt(n), 12)));
    expectSameGreedy(await run(tiled), await run(untiled));
    const attention = async (engine: WebGpuEngine, maxTokens: number) =>
      Object.fromEntries((await engine.profileLastStep({ tokens: prompt(40), maxTokens, temperature: 0 })).kernels.filter((k) => k.label.startsWith('attention-')).map((k) => [k.label, k.dispatches]));
    // A 40-token prefill step (maxTokens 1 profiles it): 4 of the 5 layers tiled, the last layer on the
    // sampled row only (pruneLastLayer) a workgroup a head. Then a decode step, which rotates as it attends.
    // (The untiled engine's prefill step is not profiled here: its 256-invocation workgroups a token and
    // head take SwiftShader three minutes to replay, against 16 s tiled.)
    expect(await attention(tiled, 1)).toEqual({ 'attention-tiled-d8-g2': 4, 'attention-parallel-d8': 1 });
    expect(Object.keys(await attention(tiled, 3))).toEqual(['attention-parallel-rope-d8']);
    expect(Object.keys(await attention(untiled, 3))).toEqual(['attention-parallel-rope-d8']);
  });
});
