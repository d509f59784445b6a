import { describe, expect, it } from 'vitest';
import { floatToBf16, bf16ToFloat, floatToHalf, halfToFloat } from '../../engine/gguf/quant/half.ts';
import { dequantize, quantize, QUANT_TYPES } from '../../engine/gguf/quant/index.ts';
import { BLOCK_GEOMETRY, GgmlType, typeName } from '../../ggml/types.ts';
import { rng } from '../helpers/random.ts';

/** Gaussian-ish weights with a few outliers and an all-zero block, like real tensors. */
function weights(n: number, seed: number): Float32Array {
  const r = rng(seed);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = (r() + r() + r() + r() - 2) * 0.1;
  for (let i = 0; i < n; i += 97) x[i] *= 8;
  x.fill(0, 256, 512);
  return x;
}

/** Worst |error| allowed for an element, given the largest |x| of its block (or the element itself). */
const BOUND: Record<number, (x: number, blockMax: number) => number> = {
  [GgmlType.F32]: () => 0,
  [GgmlType.F16]: (x) => Math.max(Math.abs(x) * 2 ** -11, 2 ** -25), // below 2^-14 f16 is subnormal
  [GgmlType.BF16]: (x) => Math.abs(x) * 2 ** -8,
  // d/2 for the rounding of q, plus what rounding d to f16 moves the largest q.
  [GgmlType.Q8_0]: (_, m) => (m / 127) * 0.57,
  // The extreme maps to -8, so its opposite end (+8) clamps to 7: a whole step.
  [GgmlType.Q4_0]: (_, m) => (m / 8) * 1.01,
  // Sub-block steps are at most range/15 of the super-block, rounded up to the 6-bit scale grid.
  [GgmlType.Q4_K]: (_, m) => ((2 * m) / 15) * 0.6,
  [GgmlType.Q6_K]: (_, m) => (m / 31) * 0.6,
};

describe('quantize then dequantize', () => {
  for (const type of QUANT_TYPES) {
    it(`${typeName(type)} stays within its format's error`, () => {
      const n = 4096;
      const x = weights(n, 7 + type);
      const raw = quantize(type, x);
      expect(raw.length).toBe((n / BLOCK_GEOMETRY[type]!.elements) * BLOCK_GEOMETRY[type]!.bytes);
      const y = dequantize(type, raw, n);
      // Bounds use the super-block (256) max for K types, the block max otherwise.
      const span = type === GgmlType.Q4_K || type === GgmlType.Q6_K ? 256 : BLOCK_GEOMETRY[type]!.elements;
      for (let b = 0; b < n; b += span) {
        let m = 0;
        for (let i = b; i < b + span; i++) m = Math.max(m, Math.abs(x[i]));
        for (let i = b; i < b + span; i++) {
          const err = Math.abs(y[i] - x[i]);
          if (!(err <= BOUND[type](x[i], m) + 1e-12)) throw new Error(`${typeName(type)} element ${i}: ${y[i]} for ${x[i]}`);
        }
      }
      for (let i = 256; i < 512; i++) expect(Math.abs(y[i])).toBe(0);
    });
  }

  it('rejects a partial block', () => {
    expect(() => quantize(GgmlType.Q8_0, new Float32Array(33))).toThrow(/whole number/);
    expect(() => dequantize(GgmlType.Q4_K, new Uint8Array(144), 128)).toThrow(/whole number/);
    expect(() => dequantize(GgmlType.Q6_K, new Uint8Array(100), 256)).toThrow(/need 210 bytes/);
  });
});

describe('half conversions', () => {
  it('every f16 bit pattern survives a round trip through f32', () => {
    const wrong: number[] = [];
    for (let h = 0; h < 0x10000; h++) {
      const v = halfToFloat(h);
      const ok = Number.isNaN(v) ? Number.isNaN(halfToFloat(floatToHalf(v))) : floatToHalf(v) === h;
      if (!ok) wrong.push(h);
    }
    expect(wrong).toEqual([]);
  });
  it('f32 to f16 rounds to nearest even, including subnormals and overflow', () => {
    expect(floatToHalf(1 + 2 ** -11)).toBe(0x3c00); // tie, even stays
    expect(floatToHalf(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie, odd rounds up
    expect(floatToHalf(2 ** -25)).toBe(0); // half the smallest subnormal: ties to even zero
    expect(floatToHalf(3 * 2 ** -26)).toBe(1);
    expect(floatToHalf(65520)).toBe(0x7c00);
    expect(floatToHalf(65519)).toBe(0x7bff);
    expect(floatToHalf(-0)).toBe(0x8000);
  });
  it('bf16 keeps the top half of an f32, rounded to nearest even', () => {
    expect(bf16ToFloat(floatToBf16(1.5))).toBe(1.5);
    expect(floatToBf16(1 + 2 ** -8)).toBe(0x3f80);
    expect(floatToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
  });
});
