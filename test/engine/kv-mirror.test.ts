/**
 * The KV mirror (engine/kv/kv-mirror.ts, EngineOptions.kvMirror): on llvmpipe, steps where many tokens read
 * the same earlier KV rows gather each layer's rows into textures for attention. The engine must generate
 * exactly what it generates reading the paged cache (tokens and log-probabilities to the bit): here every
 * step mirrors (thresholds 0), so prefill chunks, decode steps, several sequences in one step and a
 * prompt whose start the prefix cache serves all take the mirror.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { loadEngine } from '../../engine/node.ts';
import { sharedModel } from '../helpers/models.ts';
import { greedyRun } from '../helpers/engine.ts';
import { testContext } from '../helpers/gpu.ts';

const model = sharedModel('TinyStories-656K-Q8_0.gguf');
// The mirror is built where textures are read faster than buffers (GpuCaps.weightTextures: llvmpipe).
const mirrored = (await testContext()).caps.weightTextures;
const LAYERS = 2;
const STORY = [1, 365, 1321, 266, 1167, 279, 1481, 715, 262, 1037, 11, 900, 540, 340, 1070, 279];
// A long prompt (several 64-token chunks), and two that share its first 100 tokens.
const LONG = Array.from({ length: 150 }, (_, i) => STORY[i % STORY.length]);
const PROMPTS = [LONG, [...LONG.slice(0, 100), 900, 540, 340], [...LONG.slice(0, 100), 1070, 279]];

const generate = (engine: WebGpuEngine, tokens: number[]) => greedyRun(engine, tokens, 16);

describe.skipIf(!mirrored)('KV mirror in the engine', () => {
  let on: WebGpuEngine;
  let off: WebGpuEngine;
  beforeAll(async () => {
    // Neither splits a decode step's positions (attention-serial-split.wgsl): a mirrored step never does,
    // and split sums, merged in another order, are not the bits of one walk.
    on = await loadEngine({ model, contextLength: 256, maxSequences: 4, kvMirror: { minReads: 0, minReadsPerRow: 0 }, splitAttentionFrom: false });
    off = await loadEngine({ model, contextLength: 256, maxSequences: 4, kvMirror: false, splitAttentionFrom: false });
  });
  afterAll(async () => {
    await on?.dispose();
    await off?.dispose();
  });

  it('a step that mirrors takes one gather dispatch a layer more', async () => {
    await generate(on, STORY);
    await generate(off, STORY);
    expect(on.stats().lastStepDispatches - off.stats().lastStepDispatches).toBe(LAYERS);
  });

  it('one sequence at a time, with prefix-cache hits: the same tokens and log-probabilities, bit for bit', async () => {
    for (const p of PROMPTS) {
      const [a, b] = [await generate(on, p), await generate(off, p)];
      expect(a.tokens).toEqual(b.tokens);
      expect(a.logprobs).toEqual(b.logprobs);
      expect(a.tokens).toHaveLength(16);
    }
    expect(on.stats().prefixCache?.hitTokens).toBeGreaterThan(0);
  });

  it('three sequences in the same steps: the same tokens and log-probabilities, bit for bit', async () => {
    const [a, b] = await Promise.all([Promise.all(PROMPTS.map((p) => generate(on, p.slice(5)))), Promise.all(PROMPTS.map((p) => generate(off, p.slice(5))))]);
    for (let i = 0; i < PROMPTS.length; i++) {
      expect(a[i].tokens).toEqual(b[i].tokens);
      expect(a[i].logprobs).toEqual(b[i].logprobs);
    }
  });
});
