/**
 * CPU reference of the GGML weight formats the engine computes with: decode a tensor's bytes to f32, or
 * encode f32 into valid blocks (to synthesize test and benchmark models). The GPU decodes the same
 * blocks in its kernels (kernels/quant/); these functions are the ground truth its tests compare with.
 */
import { GgmlType, typeName } from '../../../ggml/types.ts';
import type { QuantCodec } from './codec.ts';
import { BF16, F16 } from './f16.ts';
import { F32 } from './f32.ts';
import { Q4_0 } from './q4_0.ts';
import { Q4_K } from './q4_k.ts';
import { Q6_K } from './q6_k.ts';
import { Q8_0 } from './q8_0.ts';

export type { QuantCodec } from './codec.ts';

const CODECS: Partial<Record<GgmlType, QuantCodec>> = {
  [GgmlType.F32]: F32,
  [GgmlType.F16]: F16,
  [GgmlType.BF16]: BF16,
  [GgmlType.Q8_0]: Q8_0,
  [GgmlType.Q4_0]: Q4_0,
  [GgmlType.Q4_K]: Q4_K,
  [GgmlType.Q6_K]: Q6_K,
};

/** The types with a CPU codec here. */
export const QUANT_TYPES: readonly GgmlType[] = Object.keys(CODECS).map(Number) as GgmlType[];

export function codec(type: GgmlType): QuantCodec {
  const c = CODECS[type];
  if (!c) throw new Error(`no CPU codec for tensor type ${typeName(type)} (have: ${QUANT_TYPES.map(typeName).join(', ')})`);
  return c;
}

/** Encode f32 values as GGML blocks of `type`; `src.length` must be a whole number of blocks. */
export function quantize(type: GgmlType, src: Float32Array): Uint8Array {
  return codec(type).quantize(src);
}

/** Decode the first `elements` values of a tensor of `type` from its GGUF bytes. */
export function dequantize(type: GgmlType, raw: Uint8Array, elements: number): Float32Array {
  return codec(type).dequantize(raw, elements);
}
