/**
 * Product tails (kernels/matvec-tail.ts, EngineOptions.productTails): on llvmpipe a decode
 * product runs the pass after it in its own last invocations. The engine must generate exactly what it
 * generates with every pass its own dispatch (tokens and log-probabilities to the bit), alone and with
 * sequences decoding together (several rows of x per product), in fewer dispatches. TinyStories-656K's
 * Q8_0 file takes every tail: RoPE + KV store after QKV, the FFN norm after O, the activation after
 * gate|up, the next layer's norm after the first layer's down product.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { loadEngine } from '../../engine/node.ts';
import { sharedModel } from '../helpers/models.ts';
import { greedyRun } from '../helpers/engine.ts';
import { testContext } from '../helpers/gpu.ts';

const model = sharedModel('TinyStories-656K-Q8_0.gguf');
// Tails are built where atomics order the stores before them (GpuCaps.orderedAtomics: llvmpipe).
const tails = (await testContext()).caps.orderedAtomics;
const PROMPTS = [
  [1, 365, 1321, 266, 1167],
  [1, 1070, 279, 1481, 715, 262, 1037, 11],
  [1, 900, 540, 340],
];

const generate = (engine: WebGpuEngine, tokens: number[]) => greedyRun(engine, tokens, 24);

describe.skipIf(!tails)('product tails', () => {
  let on: WebGpuEngine;
  let off: WebGpuEngine;
  beforeAll(async () => {
    on = await loadEngine({ model, contextLength: 256, maxSequences: 4 });
    off = await loadEngine({ model, contextLength: 256, maxSequences: 4, productTails: false });
  });
  afterAll(async () => {
    await on?.dispose();
    await off?.dispose();
  });

  it('a decode step takes 7 dispatches fewer: 3 a layer and the first layer\'s down product taking the next norm', async () => {
    await generate(on, PROMPTS[0]);
    await generate(off, PROMPTS[0]);
    expect(off.stats().lastStepDispatches - on.stats().lastStepDispatches).toBe(2 * 3 + 1);
  });

  it('one sequence at a time: the same tokens and log-probabilities, bit for bit', async () => {
    for (const p of PROMPTS) {
      const [a, b] = [await generate(on, p), await generate(off, p)];
      expect(a.tokens).toEqual(b.tokens);
      expect(a.logprobs).toEqual(b.logprobs);
      expect(a.tokens).toHaveLength(24);
    }
  });

  it('three sequences decoding together: the same tokens and log-probabilities, bit for bit', async () => {
    const [a, b] = await Promise.all([Promise.all(PROMPTS.map((p) => generate(on, p))), Promise.all(PROMPTS.map((p) => generate(off, p)))]);
    for (let i = 0; i < PROMPTS.length; i++) {
      expect(a[i].tokens).toEqual(b[i].tokens);
      expect(a[i].logprobs).toEqual(b[i].logprobs);
    }
  });
});
