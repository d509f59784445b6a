/**
 * Q4_K: super-blocks of 256 as { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] } (144 bytes), eight
 * sub-blocks of 32 with a 6-bit scale and 6-bit min each; x = d * sc * q - dmin * m. Each 32 bytes of
 * qs hold a 64-element chunk: low nibbles are its first 32 elements, high nibbles the next 32.
 */
import { GgmlType } from '../../../ggml/types.ts';
import { checkBlocks, checkRaw, type QuantCodec } from './codec.ts';
import { floatToHalf, halfToFloat } from './half.ts';

const QK = 256;
const BYTES = 144;

/** get_scale_min_k4: sub-blocks 0-3 use the low 6 bits of bytes 0-7; 4-7 borrow their top 2 bits. */
export function q4kScaleMin(scales: Uint8Array, j: number): [number, number] {
  if (j < 4) return [scales[j] & 63, scales[j + 4] & 63];
  return [(scales[j + 4] & 0xf) | ((scales[j - 4] >> 6) << 4), (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4)];
}

function packScaleMin(scales: Uint8Array, j: number, ls: number, lm: number): void {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
    scales[j - 4] |= (ls >> 4) << 6;
    scales[j] |= (lm >> 4) << 6;
  }
}

export const Q4_K: QuantCodec = {
  type: GgmlType.Q4_K,
  blockElements: QK,
  blockBytes: BYTES,
  dequantize(raw, elements) {
    const nb = checkBlocks('Q4_K', elements, QK);
    checkRaw('Q4_K', raw, nb * BYTES);
    const out = new Float32Array(elements);
    for (let b = 0; b < nb; b++) {
      const o = b * BYTES;
      const d = halfToFloat(raw[o] | (raw[o + 1] << 8));
      const dmin = halfToFloat(raw[o + 2] | (raw[o + 3] << 8));
      const scales = raw.subarray(o + 4, o + 16);
      for (let c = 0; c < 4; c++) {
        const [s1, m1] = q4kScaleMin(scales, 2 * c);
        const [s2, m2] = q4kScaleMin(scales, 2 * c + 1);
        const d1 = Math.fround(d * s1), n1 = Math.fround(dmin * m1);
        const d2 = Math.fround(d * s2), n2 = Math.fround(dmin * m2);
        const y = b * QK + c * 64;
        for (let l = 0; l < 32; l++) {
          const q = raw[o + 16 + c * 32 + l];
          out[y + l] = d1 * (q & 15) - n1;
          out[y + 32 + l] = d2 * (q >> 4) - n2;
        }
      }
    }
    return out;
  },
  // Not llama.cpp's iterative search: each sub-block takes its own range and min (clamped to <= 0, the
  // format cannot add), the 6-bit scales round up so the range fits 0..15. Enough for synthetic models.
  quantize(src) {
    const nb = checkBlocks('Q4_K', src.length, QK);
    const out = new Uint8Array(nb * BYTES);
    const view = new DataView(out.buffer);
    const scale = new Float64Array(8);
    const minv = new Float64Array(8);
    for (let b = 0; b < nb; b++) {
      const x = src.subarray(b * QK, b * QK + QK);
      const o = b * BYTES;
      for (let j = 0; j < 8; j++) {
        let lo = 0;
        let hi = -Infinity;
        for (let l = 0; l < 32; l++) {
          lo = Math.min(lo, x[j * 32 + l]);
          hi = Math.max(hi, x[j * 32 + l]);
        }
        scale[j] = Math.max(0, hi - lo) / 15;
        minv[j] = -lo;
      }
      const d = halfToFloat(floatToHalf(Math.max(...scale) / 63));
      const dmin = halfToFloat(floatToHalf(Math.max(...minv) / 63));
      view.setUint16(o, floatToHalf(d), true);
      view.setUint16(o + 2, floatToHalf(dmin), true);
      const scales = out.subarray(o + 4, o + 16);
      for (let j = 0; j < 8; j++) {
        const ls = d > 0 ? Math.min(63, Math.ceil(scale[j] / d - 1e-6)) : 0;
        const lm = dmin > 0 ? Math.min(63, Math.round(minv[j] / dmin)) : 0;
        packScaleMin(scales, j, ls, lm);
        const es = Math.fround(d * ls);
        const em = Math.fround(dmin * lm);
        const c = j >> 1;
        for (let l = 0; l < 32; l++) {
          const q = es > 0 ? Math.max(0, Math.min(15, Math.round((x[j * 32 + l] + em) / es))) : 0;
          out[o + 16 + c * 32 + l] |= j & 1 ? q << 4 : q;
        }
      }
    }
    return out;
  },
};
