import { GgmlType } from '../types.ts';
import { checkBlocks, checkRaw, type QuantCodec } from './codec.ts';
import { bf16ToFloat, floatToBf16, floatToHalf, halfToFloat } from './half.ts';

export const F16: QuantCodec = {
  type: GgmlType.F16,
  blockElements: 1,
  blockBytes: 2,
  dequantize(raw, elements) {
    checkBlocks('F16', elements, 1);
    const view = checkRaw('F16', raw, elements * 2);
    const out = new Float32Array(elements);
    for (let i = 0; i < elements; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
    return out;
  },
  quantize(src) {
    const out = new Uint8Array(src.length * 2);
    const view = new DataView(out.buffer);
    for (let i = 0; i < src.length; i++) view.setUint16(i * 2, floatToHalf(src[i]), true);
    return out;
  },
};

export const BF16: QuantCodec = {
  type: GgmlType.BF16,
  blockElements: 1,
  blockBytes: 2,
  dequantize(raw, elements) {
    checkBlocks('BF16', elements, 1);
    const view = checkRaw('BF16', raw, elements * 2);
    const out = new Float32Array(elements);
    for (let i = 0; i < elements; i++) out[i] = bf16ToFloat(view.getUint16(i * 2, true));
    return out;
  },
  quantize(src) {
    const out = new Uint8Array(src.length * 2);
    const view = new DataView(out.buffer);
    for (let i = 0; i < src.length; i++) view.setUint16(i * 2, floatToBf16(src[i]), true);
    return out;
  },
};
