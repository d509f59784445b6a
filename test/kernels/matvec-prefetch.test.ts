/**
 * The CPU rasterisers' decode products prefetch the next product's weights (kernels/matvec-prefetch.wgsl):
 * the results must be the same bits whatever the next weights hold, and the prefetch's loads must reach
 * the result through keep_loads(), or a compiler could drop them as dead code.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatVecKernel } from '../../kernels/matvec.ts';
import { QuantizeXKernel, q8RowVec4s } from '../../kernels/quantize-x.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { randomF32 } from '../helpers/random.ts';
import { randomWeights, uploadRows, WEIGHT_TYPES } from '../quant/weights.ts';

const ctx = await testContext();

function randomWords(n: number, seed: number): Uint32Array {
  let s = seed >>> 0;
  return Uint32Array.from({ length: n }, () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0));
}

const colsFor = (type: GgmlType) => (type === GgmlType.Q4_K || type === GgmlType.Q6_K ? 512 : 256);

/** y = W x with `kern`, its params' `zero` word overwritten with `zero` (always 0 in the engine). */
async function product(kern: MatVecKernel, group: GPUBindGroup, y: GPUBuffer, p: { t: number; n: number; k: number; xStride?: number }, zero = 0): Promise<Float32Array> {
  await runPass(ctx, (pass, arena) => {
    kern.encode(pass, arena, group, p);
    arena.u32[11] = zero; // the only slot of this pass: Params.zero
  });
  return readF32(ctx, y, p.t * p.n);
}

describe.each(WEIGHT_TYPES.map((t) => [typeName(t), t] as const))('rows matvec %s with a prefetch binding', (_, type) => {
  const n = 300;
  const k = colsFor(type);
  const w = randomWeights(type, n, k, 41 + type);

  it.each([1, 3])('T=%i: the same bits as without, for any next weights; the loads reach the result', async (t) => {
    const x = ctx.storage('x', t * k * 4, randomF32(t * k, 7 + t));
    const bw = uploadRows(ctx, w);
    const plain = new MatVecKernel(ctx, type, t, 'rows');
    const yPlain = ctx.storage('y', t * n * 4);
    const want = await product(plain, plain.bind(bw, x, yPlain), yPlain, { t, n, k });

    const kern = new MatVecKernel(ctx, type, t, 'rows', { prefetch: true });
    expect(() => kern.bind(bw, x, yPlain)).toThrow(/needs a next buffer/);
    // Next weights larger and smaller than the product's share of invocations, one not a whole number of
    // cache lines, and the 16-byte stand-in for none.
    for (const [words, seed] of [[50_000, 1], [1_000, 2], [37, 3], [4, 4]]) {
      const next = ctx.storage('next', words * 4, randomWords(words, seed));
      const y = ctx.storage('y', t * n * 4);
      const group = kern.bind(bw, x, y, { next });
      expect(new Uint32Array((await product(kern, group, y, { t, n, k })).buffer)).toEqual(new Uint32Array(want.buffer));
      if (words >= 1_000) {
        // With Params.zero = 1 the prefetched words are ORed into a result: proof the loads are live.
        const leaked = new Uint32Array((await product(kern, group, y, { t, n, k }, 1)).buffer);
        expect(leaked).not.toEqual(new Uint32Array(want.buffer));
      }
    }
  });
});

describe('the engine path: Q8_0 over quantized x, prefetching', () => {
  it('gives the same bits as without', async () => {
    const [t, n, k] = [1, 576, 576];
    const w = randomWeights(GgmlType.Q8_0, n, k, 77);
    const xf = ctx.storage('x', k * 4, randomF32(k, 78));
    const xq = ctx.storage('xq', q8RowVec4s(k) * 16);
    const quantize = new QuantizeXKernel(ctx);
    await runPass(ctx, (pass, arena) => quantize.encode(pass, arena, quantize.bind(xf, xq), { tokens: 1, k, xOffset: 0, xStride: k }));
    const bw = uploadRows(ctx, w);
    const p = { t, n, k, xStride: q8RowVec4s(k) };
    const plain = new MatVecKernel(ctx, GgmlType.Q8_0, t, 'rows', { xq8: true });
    const yPlain = ctx.storage('y', n * 4);
    const want = await product(plain, plain.bind(bw, xq, yPlain), yPlain, p);
    const kern = new MatVecKernel(ctx, GgmlType.Q8_0, t, 'rows', { xq8: true, prefetch: true });
    const y = ctx.storage('y', n * 4);
    const got = await product(kern, kern.bind(bw, xq, y, { next: ctx.storage('next', 1 << 18, randomWords(1 << 16, 9)) }), y, p);
    expect(new Uint32Array(got.buffer)).toEqual(new Uint32Array(want.buffer));
  });

  it('only the rows variant prefetches', () => {
    expect(() => new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'coop', { prefetch: true })).toThrow(/only the rows variant/);
  });
});
