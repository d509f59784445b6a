/**
 * Q4_0: blocks of 32 as { f16 d; u8 qs[16] } (18 bytes). Byte j holds element j in its low nibble and
 * element j + 16 in its high nibble; x = d * (q - 8).
 */
import { GgmlType } from '../../../ggml/types.ts';
import { checkBlocks, checkRaw, type QuantCodec } from './codec.ts';
import { floatToHalf, halfToFloat } from './half.ts';

const QK = 32;
const BYTES = 18;

export const Q4_0: QuantCodec = {
  type: GgmlType.Q4_0,
  blockElements: QK,
  blockBytes: BYTES,
  dequantize(raw, elements) {
    const nb = checkBlocks('Q4_0', elements, QK);
    checkRaw('Q4_0', raw, nb * BYTES);
    const out = new Float32Array(elements);
    for (let b = 0; b < nb; b++) {
      const o = b * BYTES;
      const d = halfToFloat(raw[o] | (raw[o + 1] << 8));
      for (let j = 0; j < QK / 2; j++) {
        const q = raw[o + 2 + j];
        out[b * QK + j] = d * ((q & 15) - 8);
        out[b * QK + j + 16] = d * ((q >> 4) - 8);
      }
    }
    return out;
  },
  // quantize_row_q4_0_ref: the element of largest magnitude maps to -8, in f32 arithmetic.
  quantize(src) {
    const nb = checkBlocks('Q4_0', src.length, QK);
    const out = new Uint8Array(nb * BYTES);
    const view = new DataView(out.buffer);
    for (let b = 0; b < nb; b++) {
      const x = src.subarray(b * QK, b * QK + QK);
      let amax = 0;
      let max = 0;
      for (let j = 0; j < QK; j++) {
        if (amax < Math.abs(x[j])) {
          amax = Math.abs(x[j]);
          max = x[j];
        }
      }
      const d = Math.fround(max / -8);
      const id = d ? Math.fround(1 / d) : 0;
      view.setUint16(b * BYTES, floatToHalf(d), true);
      const q = (v: number) => Math.min(15, Math.trunc(Math.fround(Math.fround(v * id) + 8.5)));
      for (let j = 0; j < QK / 2; j++) out[b * BYTES + 2 + j] = q(x[j]) | (q(x[j + 16]) << 4);
    }
    return out;
  },
};
