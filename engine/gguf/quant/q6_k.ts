/**
 * Q6_K: super-blocks of 256 as { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d } (210 bytes), sixteen
 * sub-blocks of 16 with a signed 8-bit scale; x = d * sc * (q - 32), q six bits. Each 128-element half
 * uses 64 bytes of ql and 32 of qh: for l < 32, ql[l] and ql[l + 32] carry the low nibbles of elements
 * l, l + 32 (low nibble) and l + 64, l + 96 (high nibble); qh[l] their top two bits, two bits each.
 */
import { GgmlType } from '../../../ggml/types.ts';
import { checkBlocks, checkRaw, type QuantCodec } from './codec.ts';
import { floatToHalf, halfToFloat } from './half.ts';

const QK = 256;
const BYTES = 210;

export const Q6_K: QuantCodec = {
  type: GgmlType.Q6_K,
  blockElements: QK,
  blockBytes: BYTES,
  dequantize(raw, elements) {
    const nb = checkBlocks('Q6_K', elements, QK);
    const view = checkRaw('Q6_K', raw, nb * BYTES);
    const out = new Float32Array(elements);
    for (let b = 0; b < nb; b++) {
      const o = b * BYTES;
      const d = halfToFloat(view.getUint16(o + 208, true));
      for (let h = 0; h < 2; h++) {
        const ql = o + 64 * h;
        const qh = o + 128 + 32 * h;
        const sc = o + 192 + 8 * h;
        const y = b * QK + 128 * h;
        for (let l = 0; l < 32; l++) {
          const is = l >> 4;
          const a = raw[ql + l], c = raw[ql + l + 32], hb = raw[qh + l];
          out[y + l] = Math.fround(d * view.getInt8(sc + is)) * (((a & 15) | ((hb & 3) << 4)) - 32);
          out[y + l + 32] = Math.fround(d * view.getInt8(sc + is + 2)) * (((c & 15) | (((hb >> 2) & 3) << 4)) - 32);
          out[y + l + 64] = Math.fround(d * view.getInt8(sc + is + 4)) * (((a >> 4) | (((hb >> 4) & 3) << 4)) - 32);
          out[y + l + 96] = Math.fround(d * view.getInt8(sc + is + 6)) * (((c >> 4) | (((hb >> 6) & 3) << 4)) - 32);
        }
      }
    }
    return out;
  },
  // Not llama.cpp's search: symmetric per sub-block (q in -31..31), positive 8-bit scales rounded up.
  quantize(src) {
    const nb = checkBlocks('Q6_K', src.length, QK);
    const out = new Uint8Array(nb * BYTES);
    const view = new DataView(out.buffer);
    const scale = new Float64Array(16);
    const L = new Uint8Array(QK);
    for (let b = 0; b < nb; b++) {
      const x = src.subarray(b * QK, b * QK + QK);
      const o = b * BYTES;
      for (let j = 0; j < 16; j++) {
        let amax = 0;
        for (let l = 0; l < 16; l++) amax = Math.max(amax, Math.abs(x[j * 16 + l]));
        scale[j] = amax / 31;
      }
      const d = halfToFloat(floatToHalf(Math.max(...scale) / 127));
      view.setUint16(o + 208, floatToHalf(d), true);
      for (let j = 0; j < 16; j++) {
        const sc = d > 0 ? Math.min(127, Math.ceil(scale[j] / d - 1e-6)) : 0;
        view.setInt8(o + 192 + j, sc);
        const es = Math.fround(d * sc);
        for (let l = 0; l < 16; l++) {
          const q = es > 0 ? Math.max(-32, Math.min(31, Math.round(x[j * 16 + l] / es))) : 0;
          L[j * 16 + l] = q + 32;
        }
      }
      for (let h = 0; h < 2; h++) {
        const ql = o + 64 * h;
        const qh = o + 128 + 32 * h;
        const y = 128 * h;
        for (let l = 0; l < 32; l++) {
          const q1 = L[y + l], q2 = L[y + l + 32], q3 = L[y + l + 64], q4 = L[y + l + 96];
          out[ql + l] = (q1 & 15) | ((q3 & 15) << 4);
          out[ql + l + 32] = (q2 & 15) | ((q4 & 15) << 4);
          out[qh + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
        }
      }
    }
    return out;
  },
};
