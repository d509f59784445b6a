/** The training matmul against the reference: every transpose combination, offsets, alpha and accumulation. */
import { describe, expect, it } from 'vitest';
import { TrainMatmulKernel } from '../../../kernels/train/matmul.ts';
import { runPass, testContext } from '../../helpers/gpu.ts';
import * as ref from '../reference.ts';
import { f32, read, relError } from './io.ts';

describe('train-matmul', () => {
  // Ragged shapes take the element-by-element load path; shapes whose offsets and leading dimensions are
  // multiples of 4 take the vec4 path, whose 4 × 4 blocks still hang over the tiles' edges here. Each tile
  // shape (square, tall for n ≤ 8, wide for m ≤ 8) is run with both, and with a last slice shallower
  // than the others.
  const shapes = [
    { name: 'square ragged', m: 37, n: 45, k: 19, aOffset: 3, bOffset: 1, tile: 'square' },
    { name: 'square vec4-aligned', m: 36, n: 44, k: 52, aOffset: 4, bOffset: 8, tile: 'square' },
    { name: 'tall ragged', m: 150, n: 6, k: 19, aOffset: 3, bOffset: 1, tile: 'tall' },
    { name: 'tall vec4-aligned', m: 132, n: 8, k: 36, aOffset: 4, bOffset: 8, tile: 'tall' },
    { name: 'wide ragged', m: 5, n: 150, k: 23, aOffset: 3, bOffset: 1, tile: 'wide' },
    { name: 'wide vec4-aligned', m: 8, n: 136, k: 68, aOffset: 8, bOffset: 4, tile: 'wide' },
    { name: 'square rank-deep vec4-aligned', m: 40, n: 36, k: 8, aOffset: 0, bOffset: 4, tile: 'square' },
    { name: 'square two row tiles ragged', m: 99, n: 41, k: 33, aOffset: 1, bOffset: 2, tile: 'square' },
    { name: 'square two row tiles vec4-aligned', m: 100, n: 40, k: 44, aOffset: 12, bOffset: 0, tile: 'square' },
  ];
  for (const shape of shapes)
    for (const [transA, transB] of [
      [false, false],
      [false, true],
      [true, false],
      [true, true],
    ] as const) {
      it(`op(A)·op(B), transA ${transA}, transB ${transB}, ${shape.name} sizes`, async () => {
        const ctx = await testContext();
        const k = new TrainMatmulKernel(ctx);
        const { m, n, k: kk, aOffset, bOffset } = shape;
        const p = { m, n, k: kk, transA, transB, lda: transA ? m : kk, ldb: transB ? kk : n, ldc: n, aOffset, bOffset, cOffset: 5 };
        expect(TrainMatmulKernel.vec4(p)).toBe(shape.name.endsWith('vec4-aligned'));
        expect(TrainMatmulKernel.shape(p)).toBe(shape.tile);
        const a = ref.random(m * kk, 1, 1);
        const b = ref.random(kk * n, 2, 1);
        const want = ref.matmul(a, b, m, n, kk, transA, transB);
        // A and B sit after some leading values, C after others, to exercise the offsets.
        const ab = f32(ctx, [...new Array(aOffset).fill(9), ...a]);
        const bb = f32(ctx, [...new Array(bOffset).fill(7), ...b]);
        const c0 = ref.random(m * n + 5, 3);
        const cb = f32(ctx, c0);
        await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.kernel(p).bind([ab, bb, cb]), { ...p, accumulate: true, alpha: 0.5 }));
        const got = await read(ctx, cb, m * n + 5);
        expect(Array.from(got.subarray(0, 5))).toEqual(Array.from(Float32Array.from(c0.subarray(0, 5))));
        const expected = want.map((v, i) => Math.fround(c0[5 + i]) + 0.5 * v);
        expect(relError(got.subarray(5), expected)).toBeLessThan(1e-5);
        for (const buf of [ab, bb, cb]) buf.destroy();
      });
    }

  it('overwrites C when not accumulating, and a long inner dimension (the LM head backward) stays exact', async () => {
    const ctx = await testContext();
    const k = new TrainMatmulKernel(ctx);
    const [m, n, kk] = [5, 36, 700];
    const a = ref.random(m * kk, 4);
    const b = ref.random(kk * n, 5);
    const ab = f32(ctx, a);
    const bb = f32(ctx, b);
    const cb = f32(ctx, ref.random(m * n, 6, 100));
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.kernel({ m, n, k: kk, transA: false, transB: false, lda: kk, ldb: n }).bind([ab, bb, cb]), { m, n, k: kk, transA: false, transB: false, lda: kk, ldb: n, ldc: n, accumulate: false }));
    expect(relError(await read(ctx, cb, m * n), ref.matmul(a, b, m, n, kk))).toBeLessThan(1e-5);
    for (const buf of [ab, bb, cb]) buf.destroy();
  });
});
