import { GgmlType } from '../../../ggml/types.ts';
import { scalarCodec } from './codec.ts';

export const F32 = scalarCodec(
  'F32',
  GgmlType.F32,
  4,
  (view, at) => view.getFloat32(at, true),
  (view, at, v) => view.setFloat32(at, v, true),
);
