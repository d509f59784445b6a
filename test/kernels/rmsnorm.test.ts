import { describe, expect, it } from 'vitest';
import { RmsNormKernel } from '../../kernels/rmsnorm.ts';
import { testContext, runPass, readF32 } from '../helpers/gpu.ts';
import { randomF32, maxRelError } from '../helpers/random.ts';

function reference(x: Float32Array, w: Float32Array, rows: number, dim: number, eps: number): Float32Array {
  const y = new Float32Array(rows * dim);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[r * dim + i] ** 2;
    const scale = 1 / Math.sqrt(ss / dim + eps);
    for (let i = 0; i < dim; i++) y[r * dim + i] = x[r * dim + i] * scale * w[i];
  }
  return y;
}

describe.each(['workgroup', 'serial'] as const)('rmsnorm kernel (%s)', (variant) => {
  for (const [rows, dim] of [[1, 64], [3, 100], [7, 288], [2, 2048], [40, 64]] as const) {
    it(`matches the reference for ${rows}x${dim}`, async () => {
      const ctx = await testContext();
      const x = randomF32(rows * dim, rows * 31 + dim, 3);
      const w = randomF32(dim, dim, 1);
      const k = new RmsNormKernel(ctx, variant);
      const bx = ctx.storage('x', x.byteLength, x);
      const bw = ctx.storage('w', w.byteLength, w);
      const by = ctx.storage('y', x.byteLength);
      const group = k.bind(bx, bw, by);
      await runPass(ctx, (pass, arena) => k.encode(pass, arena, group, { rows, dim, eps: 1e-5 }));
      const y = await readF32(ctx, by, rows * dim);
      expect(maxRelError(y, reference(x, w, rows, dim, 1e-5))).toBeLessThan(1e-5);
    });
  }
});
