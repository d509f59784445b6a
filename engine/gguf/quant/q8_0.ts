/** Q8_0: blocks of 32 as { f16 d; int8 qs[32] } (34 bytes); x = d * q. */
import { GgmlType } from '../../../ggml/types.ts';
import { checkBlocks, checkRaw, roundAway, type QuantCodec } from './codec.ts';
import { floatToHalf, halfToFloat } from './half.ts';

const QK = 32;
const BYTES = 34;

export const Q8_0: QuantCodec = {
  type: GgmlType.Q8_0,
  blockElements: QK,
  blockBytes: BYTES,
  dequantize(raw, elements) {
    const nb = checkBlocks('Q8_0', elements, QK);
    const view = checkRaw('Q8_0', raw, nb * BYTES);
    const out = new Float32Array(elements);
    for (let b = 0; b < nb; b++) {
      const o = b * BYTES;
      const d = halfToFloat(view.getUint16(o, true));
      for (let j = 0; j < QK; j++) out[b * QK + j] = d * view.getInt8(o + 2 + j);
    }
    return out;
  },
  // quantize_row_q8_0_ref, in f32 arithmetic, so blocks match llama.cpp's byte for byte.
  quantize(src) {
    const nb = checkBlocks('Q8_0', src.length, QK);
    const out = new Uint8Array(nb * BYTES);
    const view = new DataView(out.buffer);
    for (let b = 0; b < nb; b++) {
      const x = src.subarray(b * QK, b * QK + QK);
      let amax = 0;
      for (let j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[j]));
      const d = Math.fround(amax / 127);
      const id = d ? Math.fround(1 / d) : 0;
      view.setUint16(b * BYTES, floatToHalf(d), true);
      for (let j = 0; j < QK; j++) view.setInt8(b * BYTES + 2 + j, roundAway(Math.fround(x[j] * id)));
    }
    return out;
  },
};
