/** RMSNorm, RoPE and SwiGLU training kernels, forward and backward, against the CPU reference. */
import { describe, expect, it } from 'vitest';
import { TrainRmsNormBackward, TrainRmsNormForward } from '../../../kernels/train/rmsnorm.ts';
import { TrainRopeKernel } from '../../../kernels/train/rope.ts';
import { TrainSwiGluKernels } from '../../../kernels/train/swiglu.ts';
import { runPass, testContext } from '../../helpers/gpu.ts';
import * as ref from '../reference.ts';
import { f32, read, relError, u32, zeros } from './io.ts';

describe('train-rmsnorm', () => {
  it('forward keeps 1/rms; backward adds the input gradient to what dx holds', async () => {
    const ctx = await testContext();
    const fwd = new TrainRmsNormForward(ctx);
    const bwd = new TrainRmsNormBackward(ctx);
    const [rows, n, eps] = [5, 150, 1e-5];
    const x = ref.random(rows * n, 1, 2);
    const w = ref.random(n, 2);
    const dy = ref.random(rows * n, 3);
    const prior = ref.random(rows * n, 4);
    const [xb, wb, dyb] = [f32(ctx, x), f32(ctx, w), f32(ctx, dy)];
    const [yb, rb, dxb] = [zeros(ctx, rows * n), zeros(ctx, rows), f32(ctx, prior)];
    await runPass(ctx, (pass, arena) => {
      fwd.encode(pass, arena, fwd.kernel.bind([xb, wb, yb, rb]), { rows, n, eps });
      bwd.encode(pass, arena, bwd.kernel.bind([xb, wb, rb, dyb, dxb]), { rows, n, accumulate: true });
    });
    const want = ref.rmsnorm(x, w, rows, n, eps);
    expect(relError(await read(ctx, yb, rows * n), want.y)).toBeLessThan(1e-5);
    expect(relError(await read(ctx, rb, rows), want.rstd)).toBeLessThan(1e-5);
    const dx = ref.rmsnormBackward(x, w, dy, rows, n, eps).map((v, i) => v + prior[i]);
    expect(relError(await read(ctx, dxb, rows * n), dx)).toBeLessThan(1e-5);
  });
});

describe('train-rope', () => {
  for (const neox of [false, true]) {
    it(`${neox ? 'NeoX' : 'adjacent-pair'} order, partial rotation, linear scaling: forward rotates, backward rotates back`, async () => {
      const ctx = await testContext();
      const k = new TrainRopeKernel(ctx);
      const cfg = { heads: 3, headDim: 8, nRot: 6, neox, base: 10000, freqScale: 0.25 };
      const positions = [0, 1, 2, 40, 0, 511];
      const x = ref.random(positions.length * 3 * 8, 5);
      const [xb, dxb, pb, fb] = [f32(ctx, x), f32(ctx, x), u32(ctx, positions), f32(ctx, [1, 1, 1, 1])];
      const settings = { tokens: positions.length, heads: 3, headDim: 8, nRot: 6, neox, freqBase: 10000, freqScale: 0.25, useFactors: false };
      await runPass(ctx, (pass, arena) => {
        k.encode(pass, arena, k.kernel.bind([xb, pb, fb]), { ...settings, direction: 1 });
        k.encode(pass, arena, k.kernel.bind([dxb, pb, fb]), { ...settings, direction: -1 });
      });
      // Vulkan lets sin/cos be off by 2^-11 absolute (SwiftShader is, at angles of ~100 rad); a wrong angle,
      // pair or direction is off by O(1).
      expect(relError(await read(ctx, xb, x.length), ref.rope(x, positions, cfg, 1))).toBeLessThan(1e-3);
      expect(relError(await read(ctx, dxb, x.length), ref.rope(x, positions, cfg, -1))).toBeLessThan(1e-3);
    });
  }
});

describe('train-swiglu', () => {
  it('forward and backward', async () => {
    const ctx = await testContext();
    const k = new TrainSwiGluKernels(ctx);
    const n = 1000;
    const gate = ref.random(n, 6, 6);
    const up = ref.random(n, 7, 2);
    const dh = ref.random(n, 8);
    const [gb, ub, dhb, hb, dgb, dub] = [f32(ctx, gate), f32(ctx, up), f32(ctx, dh), zeros(ctx, n), zeros(ctx, n), zeros(ctx, n)];
    await runPass(ctx, (pass, arena) => {
      k.encode(pass, arena, 'forward', k.forward.bind([gb, ub, hb]), n);
      k.encode(pass, arena, 'backward', k.backward.bind([gb, ub, dhb, dgb, dub]), n);
    });
    const want = ref.swigluBackward(gate, up, dh);
    expect(relError(await read(ctx, hb, n), ref.swiglu(gate, up))).toBeLessThan(1e-5);
    expect(relError(await read(ctx, dgb, n), want.dgate)).toBeLessThan(1e-5);
    expect(relError(await read(ctx, dub, n), want.dup)).toBeLessThan(1e-5);
  });
});
