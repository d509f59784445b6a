import { describe, expect, it } from 'vitest';
import { AddKernel } from '../../kernels/add.ts';
import { SwiGluKernel } from '../../kernels/swiglu.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

describe('elementwise kernels', () => {
  it('swiglu on a fused gate|up buffer matches silu(gate) * up', async () => {
    const ctx = await testContext();
    const T = 5;
    const n = 172;
    const gu = randomF32(T * 2 * n, 3, 4);
    const k = new SwiGluKernel(ctx);
    const b = ctx.storage('gu', gu.byteLength, gu);
    const out = ctx.storage('out', T * n * 4);
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.bind(b, b, out), { tokens: T, n, gateOffset: 0, upOffset: n, inStride: 2 * n }));
    const want = new Float32Array(T * n);
    for (let t = 0; t < T; t++)
      for (let i = 0; i < n; i++) {
        const g = gu[t * 2 * n + i];
        want[t * n + i] = (g / (1 + Math.exp(-g))) * gu[t * 2 * n + n + i];
      }
    expect(maxRelError(await readF32(ctx, out, T * n), want)).toBeLessThan(1e-5);
  });

  it('geglu (the GELU variant) matches gelu_tanh(gate) * up, passing |gate| >= 10 through as llama.cpp does', async () => {
    const ctx = await testContext();
    const T = 4;
    const n = 150;
    const gu = randomF32(T * 2 * n, 7, 12);
    const k = new SwiGluKernel(ctx, 'gelu');
    const b = ctx.storage('gu', gu.byteLength, gu);
    const out = ctx.storage('out', T * n * 4);
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.bind(b, b, out), { tokens: T, n, gateOffset: 0, upOffset: n, inStride: 2 * n }));
    const gelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * x * (1 + 0.044715 * x * x)));
    const want = new Float32Array(T * n);
    let beyond = 0;
    for (let t = 0; t < T; t++)
      for (let i = 0; i < n; i++) {
        const g = gu[t * 2 * n + i];
        if (Math.abs(g) >= 10) beyond++;
        want[t * n + i] = (g >= 10 ? g : g <= -10 ? 0 : gelu(g)) * gu[t * 2 * n + n + i];
      }
    expect(beyond).toBeGreaterThan(10);
    expect(maxRelError(await readF32(ctx, out, T * n), want)).toBeLessThan(1e-5);
  });

  it('add accumulates into a slice', async () => {
    const ctx = await testContext();
    const x = randomF32(300, 4);
    const y = randomF32(200, 5);
    const k = new AddKernel(ctx);
    const bx = ctx.storage('x', x.byteLength, x);
    const by = ctx.storage('y', y.byteLength, y);
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.bind(bx, by), { n: 150, xOffset: 100, yOffset: 50 }));
    const want = x.slice();
    for (let i = 0; i < 150; i++) want[100 + i] += y[50 + i];
    expect(maxRelError(await readF32(ctx, bx, 300), want)).toBeLessThan(1e-6);
  });
});
