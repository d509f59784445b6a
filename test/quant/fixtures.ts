/** Blocks made by llama.cpp itself (see fixtures/make-fixtures.py): input, ggml's bytes, ggml's decode. */
import { readFileSync } from 'node:fs';
import { GgmlType } from '../../ggml/types.ts';

export interface LlamaFixture {
  type: GgmlType;
  input: Float32Array;
  bytes: Uint8Array;
  dequantized: Float32Array;
}

export const FIXTURE_TYPES: Record<string, GgmlType> = {
  f16: GgmlType.F16,
  bf16: GgmlType.BF16,
  q8_0: GgmlType.Q8_0,
  q4_0: GgmlType.Q4_0,
  q4_k: GgmlType.Q4_K,
  q6_k: GgmlType.Q6_K,
};

export function llamaFixture(name: string): LlamaFixture {
  const file = readFileSync(new URL(`./fixtures/${name}.bin`, import.meta.url));
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const type = view.getUint32(0, true) as GgmlType;
  const n = view.getUint32(4, true);
  let o = 8;
  const f32 = (count: number) => {
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = view.getFloat32(o + i * 4, true);
    o += count * 4;
    return out;
  };
  const input = f32(n);
  const nbytes = view.getUint32(o, true);
  o += 4;
  const bytes = file.subarray(o, o + nbytes);
  o += nbytes;
  const dequantized = f32(n);
  return { type, input, bytes: new Uint8Array(bytes), dequantized };
}
