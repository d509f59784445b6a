/** Cross-entropy, the reductions and AdamW against the CPU reference. */
import { describe, expect, it } from 'vitest';
import { AdamWKernel } from '../../../kernels/train/adamw.ts';
import { CrossEntropyKernel } from '../../../kernels/train/cross-entropy.ts';
import { REDUCE_PARTIALS, ReduceKernel } from '../../../kernels/train/reduce.ts';
import { runPass, testContext } from '../../helpers/gpu.ts';
import * as ref from '../reference.ts';
import { f32, read, relError, u32, zeros } from './io.ts';

describe('train-cross-entropy', () => {
  it('masked per-token loss, and the gradient of the mean replacing the logits', async () => {
    const ctx = await testContext();
    const k = new CrossEntropyKernel(ctx);
    const [T, V] = [6, 300];
    const logits = ref.random(T * V, 1, 8);
    const targets = [3, 299, 0, 17, 150, 0];
    const mask = [1, 1, 0, 1, 1, 0];
    const want = ref.crossEntropy(logits, targets, mask, V);
    const [lb, tb, mb, lossb] = [f32(ctx, logits), u32(ctx, targets), f32(ctx, mask), zeros(ctx, T)];
    const evalLogits = f32(ctx, logits);
    const evalLoss = zeros(ctx, T);
    await runPass(ctx, (pass, arena) => {
      k.encode(pass, arena, k.kernel.bind([lb, tb, mb, lossb]), { tokens: T, vocab: V, invCount: 1 / want.counted, writeGrad: true });
      k.encode(pass, arena, k.kernel.bind([evalLogits, tb, mb, evalLoss]), { tokens: T, vocab: V, invCount: 1 / want.counted, writeGrad: false });
    });
    expect(relError(await read(ctx, lossb, T), want.loss)).toBeLessThan(1e-5);
    expect(relError(await read(ctx, lb, T * V), want.dlogits)).toBeLessThan(1e-6);
    // Evaluation leaves the logits alone.
    expect(relError(await read(ctx, evalLoss, T), want.loss)).toBeLessThan(1e-5);
    expect(relError(await read(ctx, evalLogits, T * V), Float32Array.from(logits))).toBe(0);
  });
});

describe('train-reduce', () => {
  for (const n of [1, 1000, 300_001]) {
    it(`sum and sum of squares of ${n} values, written or accumulated into a slot`, async () => {
      const ctx = await testContext();
      const k = new ReduceKernel(ctx);
      const x = ref.random(n, n, 1);
      const [xb, pb, out] = [f32(ctx, x), zeros(ctx, REDUCE_PARTIALS), f32(ctx, [10, 20, 30, 40])];
      const groups: [GPUBindGroup, GPUBindGroup] = [k.kernel.bind([xb, pb]), k.kernel.bind([pb, out])];
      await runPass(ctx, (pass, arena) => {
        k.encode(pass, arena, groups, { n, squares: false, outIndex: 1, accumulate: true });
        k.encode(pass, arena, groups, { n, squares: true, outIndex: 2, accumulate: false });
      });
      const got = await read(ctx, out, 4);
      const xf = Float32Array.from(x);
      const sum = xf.reduce((s, v) => s + v, 0);
      const sq = xf.reduce((s, v) => s + v * v, 0);
      expect(got[0]).toBe(10);
      expect(Math.abs(got[1] - (20 + sum))).toBeLessThan(1e-4 * Math.sqrt(n) + 1e-5);
      expect(Math.abs(got[2] - sq) / sq).toBeLessThan(1e-5);
      expect(got[3]).toBe(40);
    });
  }
});

describe('train-adamw', () => {
  for (const clipNorm of [0, 0.5, 1000]) {
    it(`three steps with clipNorm ${clipNorm} and weight decay, against the reference`, async () => {
      const ctx = await testContext();
      const k = new AdamWKernel(ctx);
      const reduce = new ReduceKernel(ctx);
      const n = 777;
      let p = ref.random(n, 1);
      let m: ref.Vec = new Float64Array(n);
      let v: ref.Vec = new Float64Array(n);
      const [pb, mb, vb, gb, scal, part] = [f32(ctx, p), zeros(ctx, n), zeros(ctx, n), zeros(ctx, n), zeros(ctx, 4), zeros(ctx, REDUCE_PARTIALS)];
      for (let step = 1; step <= 3; step++) {
        const g = Float64Array.from(Float32Array.from(ref.random(n, 10 + step, 0.1)));
        ctx.device.queue.writeBuffer(gb, 0, Float32Array.from(g));
        const o = { lr: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.1, clipNorm, step };
        await runPass(ctx, (pass, arena) => {
          reduce.encode(pass, arena, [reduce.kernel.bind([gb, part]), reduce.kernel.bind([part, scal])], { n, squares: true, outIndex: 1, accumulate: false });
          k.encode(pass, arena, k.kernel.bind([pb, gb, mb, vb, scal]), { n, normIndex: 1, lr: o.lr, beta1: o.beta1, beta2: o.beta2, epsilon: o.epsilon, weightDecay: o.weightDecay, step, clip: clipNorm });
        });
        ({ p, m, v } = ref.adamw(p, g, m, v, o));
      }
      expect(relError(await read(ctx, pb, n), p)).toBeLessThan(2e-6);
      expect(relError(await read(ctx, mb, n), m)).toBeLessThan(2e-6);
      expect(relError(await read(ctx, vb, n), v)).toBeLessThan(2e-6);
    });
  }
});
