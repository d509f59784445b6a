/**
 * llama.cpp's GGUF LoRA adapter format, written here and read by the engine's adapter loader.
 *
 * A file holds `general.type = "adapter"`, `adapter.type = "lora"`, `adapter.lora.alpha` (f32) and, for every
 * adapted matrix W (out × in) of the base model, two tensors beside W's name:
 *   `<W>.lora_a`: GGML dims [in, rank]  (rank rows of `in` values: a[r * in + i])
 *   `<W>.lora_b`: GGML dims [rank, out] (out rows of `rank` values: b[o * rank + r])
 * so that W' x = W x + scale · B (A x), with scale = userScale · alpha / rank (userScale when alpha is 0).
 * This is the orientation llama.cpp checks when it loads an adapter ("lora_a tensor is not transposed").
 */
import { encodeGguf, gv, type GgufWriteValue } from '../gguf/write.ts';
import { GgmlType } from '../../ggml/types.ts';

/** The matrices an adapter may target, by the short names the CLI and API use. */
export const LORA_TARGETS = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

/** GGUF tensor stem of each target inside a block (`blk.<i>.<stem>.weight`). */
export const LORA_TARGET_TENSORS: Readonly<Record<LoraTarget, string>> = {
  q: 'attn_q',
  k: 'attn_k',
  v: 'attn_v',
  o: 'attn_output',
  gate: 'ffn_gate',
  up: 'ffn_up',
  down: 'ffn_down',
};

export function loraTensorName(layer: number, target: LoraTarget, part: 'a' | 'b'): string {
  return `blk.${layer}.${LORA_TARGET_TENSORS[target]}.weight.lora_${part}`;
}

/** One adapted matrix: A is rank × in, B is out × rank, both row-major F32. */
export interface LoraMatrix {
  layer: number;
  target: LoraTarget;
  inDim: number;
  outDim: number;
  rank: number;
  a: Float32Array;
  b: Float32Array;
}

export interface LoraAdapterSpec {
  /** The base model's `general.architecture` (llama.cpp refuses an adapter for another architecture). */
  architecture: string;
  alpha: number;
  matrices: readonly LoraMatrix[];
  /** general.name, for listings. */
  name?: string;
  /** Extra metadata worth keeping with the weights (training hyperparameters, base model name). */
  metadata?: Readonly<Record<string, GgufWriteValue>>;
}

/** Serialises an adapter as F32 tensors (llama.cpp also reads F16 and Q8_0; F32 keeps trained weights exact). */
export function encodeLoraAdapter(spec: LoraAdapterSpec): Uint8Array {
  const metadata: Record<string, GgufWriteValue> = {
    'general.architecture': spec.architecture,
    'general.type': 'adapter',
    'adapter.type': 'lora',
    'adapter.lora.alpha': gv.f32(spec.alpha),
  };
  if (spec.name) metadata['general.name'] = spec.name;
  Object.assign(metadata, spec.metadata ?? {});
  const tensors = spec.matrices.flatMap((m) => {
    if (m.a.length !== m.rank * m.inDim) throw new Error(`${loraTensorName(m.layer, m.target, 'a')}: ${m.a.length} values, expected rank ${m.rank} × in ${m.inDim}`);
    if (m.b.length !== m.outDim * m.rank) throw new Error(`${loraTensorName(m.layer, m.target, 'b')}: ${m.b.length} values, expected out ${m.outDim} × rank ${m.rank}`);
    return [
      { name: loraTensorName(m.layer, m.target, 'a'), dims: [m.inDim, m.rank], type: GgmlType.F32, data: bytesOf(m.a) },
      { name: loraTensorName(m.layer, m.target, 'b'), dims: [m.rank, m.outDim], type: GgmlType.F32, data: bytesOf(m.b) },
    ];
  });
  return encodeGguf({ metadata, tensors });
}

function bytesOf(values: Float32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}
