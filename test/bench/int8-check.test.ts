/**
 * The GPU check's int8 kernel cases (bench/gpu/int8-check.ts), on the test adapter where it has
 * subgroups and dot4I8Packed (SwiftShader): every TinyStories-656K-shaped case and the small prefill
 * tiles within the limit (and not exact: x was quantized); the error measure itself on outputs that are
 * right, zero, off by a row, or NaN.
 */
import { describe, expect, it } from 'vitest';
import { INT8_ERROR_LIMIT, int8Cases, productError, runInt8Case } from '../../bench/gpu/int8-check.ts';
import { testContext } from '../helpers/gpu.ts';
import { GgmlType, typeName } from '../../ggml/types.ts';

const ctx = await testContext();

describe('GPU check: the int8 error measure', () => {
  // 2 rows of x, 3 weight rows, k = 2.
  const input = Float32Array.of(1, 2, -1, 0.5);
  const w = Float32Array.of(1, 0, 0, 1, 2, -1);
  const exact = Float32Array.of(1, 2, 0, -1, 0.5, -2.5);

  it('is 0 for the exact product, 1 for zeros, past the limit for rows swapped, NaN for NaN', () => {
    expect(productError(exact, input, w, 2, 3, 2)).toBe(0);
    expect(productError(new Float32Array(6), input, w, 2, 3, 2)).toBe(1);
    expect(productError(Float32Array.of(2, 1, 0, 0.5, -1, -2.5), input, w, 2, 3, 2)).toBeGreaterThan(INT8_ERROR_LIMIT);
    expect(productError(Float32Array.of(1, 2, 0, -1, 0.5, NaN), input, w, 2, 3, 2)).toBeNaN();
  });
});

describe.skipIf(!ctx.caps.subgroups || !ctx.caps.packedDot)('GPU check: int8 products against float64', () => {
  // The small shapes (k 128 and 384): the large ones are for GPU hosts (16384 x 2048 takes minutes here).
  const small = int8Cases().filter((c) => c.k <= 384);

  it('lists decode cases of every kind at 1-8 rows of x and both prefill tiles', () => {
    expect(new Set(small.map((c) => `${c.kernel} ${c.kind}`))).toEqual(new Set(['matvec plain', 'matvec norm', 'matvec glu', 'tile plain', 'tile glu', 'tile-128 plain', 'tile-128 glu']));
    expect(int8Cases().filter((c) => c.kernel === 'product')).toEqual([5, 8].map((t) => ({ type: GgmlType.Q8_0, kernel: 'product', kind: 'glu', t, n: 2048, k: 8192 })));
    expect(new Set(small.filter((c) => c.kernel === 'matvec').map((c) => c.t))).toEqual(new Set([1, 2, 6, 8]));
    // Q6_K in both tiles: the one type whose block halves the tile scales apart.
    expect(small.filter((c) => c.type === GgmlType.Q6_K).map((c) => c.kernel)).toEqual(['tile', 'tile', 'tile', 'tile', 'tile-128', 'tile-128', 'tile-128', 'tile-128']);
  });

  it.each(small.map((c) => [`${typeName(c.type)} ${c.kernel} ${c.kind} t=${c.t} ${c.n}x${c.k}`, c] as const))('%s: within the limit', async (_, c) => {
    const r = await runInt8Case(ctx, c);
    expect(r.error).toBeLessThan(INT8_ERROR_LIMIT);
    // Quantizing x costs about half a percent, not nothing: the kernel did quantize it.
    expect(r.error).toBeGreaterThan(1e-4);
    expect(r.ok).toBe(true);
  });
});
