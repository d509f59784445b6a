import { describe, expect, it } from 'vitest';
import { dequantize, quantize } from '../../engine/gguf/quant/index.ts';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { FIXTURE_TYPES, llamaFixture } from './fixtures.ts';

function rms(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  return Math.sqrt(s / a.length);
}

/** Types whose quantizer here is llama.cpp's reference one, so its bytes must match exactly. */
const EXACT_QUANTIZER = new Set([GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0]);

describe('GGML formats against blocks made by llama.cpp', () => {
  for (const [name, type] of Object.entries(FIXTURE_TYPES)) {
    const fx = llamaFixture(name);
    it(`${typeName(type)}: dequantize agrees with ggml's own`, () => {
      expect(fx.type).toBe(type);
      const ours = dequantize(type, fx.bytes, fx.input.length);
      // ggml may contract d * q - m into one fma; allow that last-bit difference.
      for (let i = 0; i < ours.length; i++) {
        expect(Math.abs(ours[i] - fx.dequantized[i])).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(fx.dequantized[i])));
      }
    });
    if (EXACT_QUANTIZER.has(type)) {
      it(`${typeName(type)}: quantize writes ggml's bytes`, () => {
        expect(Buffer.from(quantize(type, fx.input)).equals(Buffer.from(fx.bytes))).toBe(true);
      });
    } else {
      it(`${typeName(type)}: quantize is valid and not far worse than llama.cpp's search`, () => {
        const ours = dequantize(type, quantize(type, fx.input), fx.input.length);
        expect(rms(ours, fx.input)).toBeLessThan(1.3 * rms(fx.dequantized, fx.input));
      });
    }
  }
});
