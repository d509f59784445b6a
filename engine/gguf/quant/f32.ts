import { GgmlType } from '../types.ts';
import { checkBlocks, checkRaw, type QuantCodec } from './codec.ts';

export const F32: QuantCodec = {
  type: GgmlType.F32,
  blockElements: 1,
  blockBytes: 4,
  dequantize(raw, elements) {
    checkBlocks('F32', elements, 1);
    const view = checkRaw('F32', raw, elements * 4);
    const out = new Float32Array(elements);
    for (let i = 0; i < elements; i++) out[i] = view.getFloat32(i * 4, true);
    return out;
  },
  quantize(src) {
    const out = new Uint8Array(src.length * 4);
    const view = new DataView(out.buffer);
    for (let i = 0; i < src.length; i++) view.setFloat32(i * 4, src[i], true);
    return out;
  },
};
