/**
 * The weight types the GPU's int8 products take (matvec-dp4a.wgsl, matmul-tiles-dp4a.wgsl) and the WGSL
 * each joins: llama.cpp's quantization of activations, the blocks' shared helpers, and the type's
 * w_int8 (a 32-element block as 32 bytes of integers q, each weight d q + m, d and m for each half).
 */
import { GgmlType, typeName } from '../ggml/types.ts';
import block from './int8-block.wgsl?raw';
import q4_0 from './int8-weights-q4_0.wgsl?raw';
import q4_k from './int8-weights-q4_k.wgsl?raw';
import q6_k from './int8-weights-q6_k.wgsl?raw';
import q8_0 from './int8-weights-q8_0.wgsl?raw';
import math from './quantize-q8-math.wgsl?raw';
import { wgsl } from './runtime/context.ts';

const WEIGHTS = new Map<GgmlType, string>([
  [GgmlType.Q8_0, q8_0],
  [GgmlType.Q4_0, q4_0],
  [GgmlType.Q4_K, q4_k],
  [GgmlType.Q6_K, q6_k],
]);

/** Weight types of the int8 products: decode (matvec-dp4a.wgsl) and the prefill tile (matmul-tiles-dp4a.wgsl). */
export const INT8_TYPES: ReadonlySet<GgmlType> = new Set(WEIGHTS.keys());
/** The int8 prefill tile's `HALVES`: the type's block halves have a d and m each (Q6_K's sub-blocks), which the tile applies apart. */
export const tileHalves = (type: GgmlType): boolean => type === GgmlType.Q6_K;

export function int8Wgsl(type: GgmlType): string {
  const w = WEIGHTS.get(type);
  if (!w) throw new Error(`int8 products: ${typeName(type)} weights are not read as int8 (only ${[...WEIGHTS.keys()].map(typeName).join(', ')})`);
  return wgsl(math, block, w);
}
