/**
 * Gated products: the down projection reads act(gate) * up straight from fused gate|up rows. Each
 * kernel that can be chosen (matrix-vector for decode-sized batches, tiled for prefill) matches a
 * float64 reference of act(gate) * up followed by the product, for SiLU and GELU, and accumulates into y.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { WeightMatmul } from '../../kernels/matmul-select.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { randomWeights, referenceProduct, uploadRows } from '../quant/weights.ts';

const ctx = await testContext();

const ACT = {
  silu: (g: number) => g / (1 + Math.exp(-g)),
  gelu: (g: number) => (g <= -10 ? 0 : g >= 10 ? g : 0.5 * g * (1 + Math.tanh(0.7978845608028654 * g * (1 + 0.044715 * g * g)))),
};

describe.each([
  ['silu', GgmlType.Q8_0],
  ['gelu', GgmlType.F32],
  ['silu', GgmlType.Q4_K],
] as const)('gated product (%s, %s)', (activation, type) => {
  for (const t of [1, 3, 20]) {
    it(`${t} row${t > 1 ? 's' : ''} of x: act(gate) * up, then W, added to y`, async () => {
      const n = 70;
      const k = type === GgmlType.Q4_K ? 256 : 96;
      const w = randomWeights(type, n, k, 40 + t);
      // Each token's row: k gate values, k up values, then padding (a stride as the workspace may have).
      const stride = 2 * k + 8;
      const gu = randomF32(t * stride, 7 + t, 3);
      const x = new Float32Array(t * k);
      for (let i = 0; i < t; i++) for (let j = 0; j < k; j++) x[i * k + j] = ACT[activation](gu[i * stride + j]) * gu[i * stride + k + j];
      const y0 = randomF32(t * n, 3);
      const mm = new WeightMatmul(ctx, type, { glu: activation });
      const by = ctx.storage('y', y0.byteLength, y0);
      const group = mm.bind(uploadRows(ctx, w), ctx.storage('gu', gu.byteLength, gu), by);
      await runPass(ctx, (pass, arena) => mm.encode(pass, arena, group, { t, n, k, xStride: stride, gluUp: k, accumulate: true }));
      const want = referenceProduct(w, x, t).map((v, i) => v + y0[i]);
      expect(maxRelError(await readF32(ctx, by, t * n), want), `${typeName(type)} t=${t}`).toBeLessThan(1e-4);
    });
  }

  it('refuses an x layout it cannot read as aligned vec4s', async () => {
    const mm = new WeightMatmul(ctx, type, { glu: activation });
    const w = randomWeights(type, 4, 256, 1);
    const group = mm.bind(uploadRows(ctx, w), ctx.storage('gu', 2048 * 4), ctx.storage('y', 16));
    await expect(runPass(ctx, (pass, arena) => mm.encode(pass, arena, group, { t: 1, n: 4, k: 256, gluUp: 258 }))).rejects.toThrow(/multiples of 4/);
  });
});
