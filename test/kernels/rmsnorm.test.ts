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
  it('gather: norms the picked rows of x into consecutive rows of y (the output head\'s input)', async () => {
    const ctx = await testContext();
    const dim = 100;
    const x = randomF32(10 * dim, 6, 3);
    const w = randomF32(dim, 8, 1);
    const idx = Uint32Array.from([9, 0, 4, 4]);
    const k = new RmsNormKernel(ctx, variant, 'gather');
    const by = ctx.storage('y', idx.length * dim * 4);
    const group = k.bind(ctx.storage('x', x.byteLength, x), ctx.storage('w', w.byteLength, w), by, ctx.storage('i', idx.byteLength, idx));
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, group, { rows: idx.length, dim, eps: 1e-5 }));
    const picked = new Float32Array(idx.length * dim);
    idx.forEach((r, i) => picked.set(x.subarray(r * dim, (r + 1) * dim), i * dim));
    expect(maxRelError(await readF32(ctx, by, idx.length * dim), reference(picked, w, idx.length, dim, 1e-5))).toBeLessThan(1e-5);
    expect(() => k.bind(by, by, by)).toThrow(/row indices/);
  });

  // Lengths that are multiples of 4 take the serial variant's vec4 kernel; 30 its scalar one.
  for (const [rows, dim] of [[1, 64], [3, 100], [7, 288], [2, 2048], [40, 64], [2, 30]] as const) {
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

/**
 * Per-head norms inside a wider per-token row (qwen3's Q and K heads in the qkv row): rows in groups of
 * `heads` per token, tokens `stride` apart, heads from `split` on using the second stacked weight vector.
 */
function referenceHeads(x: Float32Array, w: Float32Array, p: { tokens: number; heads: number; dim: number; stride: number; offset: number; split: number; eps: number }): Float32Array {
  const y = x.slice();
  for (let t = 0; t < p.tokens; t++)
    for (let h = 0; h < p.heads; h++) {
      const b = p.offset + t * p.stride + h * p.dim;
      const wb = h >= p.split ? p.dim : 0;
      let ss = 0;
      for (let i = 0; i < p.dim; i++) ss += x[b + i] ** 2;
      const scale = 1 / Math.sqrt(ss / p.dim + p.eps);
      for (let i = 0; i < p.dim; i++) y[b + i] = x[b + i] * scale * w[wb + i];
    }
  return y;
}

describe.each(['workgroup', 'serial'] as const)('rmsnorm kernel over heads inside token rows (%s)', (variant) => {
  // Q heads then K heads per token, V heads after them untouched; an offset and a tail beyond the last token.
  const p = { tokens: 5, heads: 6, dim: 32, stride: 6 * 32 + 2 * 32, offset: 3, split: 4, eps: 1e-6 };
  const rows = p.tokens * p.heads;

  it('in place: normalizes the heads where they lie and leaves everything else alone', async () => {
    const ctx = await testContext();
    const x = randomF32(p.offset + p.tokens * p.stride + 5, 71, 3);
    const w = randomF32(2 * p.dim, 72, 2);
    const k = new RmsNormKernel(ctx, variant, 'in-place');
    const bx = ctx.storage('x', x.byteLength, x);
    const group = k.bind(bx, ctx.storage('w', w.byteLength, w));
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, group, { rows, dim: p.dim, eps: p.eps, xOffset: p.offset, group: p.heads, xStride: p.stride, wSplit: p.split }));
    expect(maxRelError(await readF32(ctx, bx, x.length), referenceHeads(x, w, p))).toBeLessThan(1e-5);
  });

  it('out of place: groups and strides address x and y independently', async () => {
    const ctx = await testContext();
    const x = randomF32(p.offset + p.tokens * p.stride, 73, 3);
    const w = randomF32(2 * p.dim, 74, 2);
    const k = new RmsNormKernel(ctx, variant);
    const yStride = p.heads * p.dim + 7;
    const by = ctx.storage('y', (p.tokens * yStride + 1) * 4);
    const group = k.bind(ctx.storage('x', x.byteLength, x), ctx.storage('w', w.byteLength, w), by);
    await runPass(ctx, (pass, arena) =>
      k.encode(pass, arena, group, { rows, dim: p.dim, eps: p.eps, xOffset: p.offset, yOffset: 1, group: p.heads, xStride: p.stride, yStride, wSplit: p.split }),
    );
    const got = await readF32(ctx, by, p.tokens * yStride + 1);
    const ref = referenceHeads(x, w, p);
    const want = new Float32Array(got.length);
    for (let t = 0; t < p.tokens; t++) want.set(ref.subarray(p.offset + t * p.stride, p.offset + t * p.stride + p.heads * p.dim), 1 + t * yStride);
    expect(maxRelError(got, want)).toBeLessThan(1e-5);
  });

  it('binds two buffers in place and three otherwise', async () => {
    const ctx = await testContext();
    const b = ctx.storage('b', 64);
    expect(() => new RmsNormKernel(ctx, variant, 'in-place').bind(b, b, b)).toThrow(/in place/);
    expect(() => new RmsNormKernel(ctx, variant).bind(b, b)).toThrow(/needs a y buffer/);
  });
});
