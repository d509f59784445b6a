import { GgmlType } from '../../../ggml/types.ts';
import { scalarCodec } from './codec.ts';
import { bf16ToFloat, floatToBf16, floatToHalf, halfToFloat } from './half.ts';

export const F16 = scalarCodec(
  'F16',
  GgmlType.F16,
  2,
  (view, at) => halfToFloat(view.getUint16(at, true)),
  (view, at, v) => view.setUint16(at, floatToHalf(v), true),
);

export const BF16 = scalarCodec(
  'BF16',
  GgmlType.BF16,
  2,
  (view, at) => bf16ToFloat(view.getUint16(at, true)),
  (view, at, v) => view.setUint16(at, floatToBf16(v), true),
);
