/** Minimal safetensors reader (F32 tensors) for float references in tests. */
import { readFileSync } from 'node:fs';

type Entry = { dtype: string; shape: number[]; data_offsets: [number, number] };

/** Every F32 tensor by name, including the aliases torch records for tied weights in __metadata__. */
export function readSafetensors(path: string): Map<string, { shape: number[]; data: Float32Array }> {
  const buf = readFileSync(path);
  const headerLen = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, unknown>;
  const out = new Map<string, { shape: number[]; data: Float32Array }>();
  const base = 8 + headerLen;
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const t = info as Entry;
    if (t.dtype !== 'F32') throw new Error(`${path}: ${name} is ${t.dtype}; only F32 is read here`);
    const bytes = buf.subarray(base + t.data_offsets[0], base + t.data_offsets[1]);
    out.set(name, { shape: t.shape, data: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) });
  }
  // torch's save_model drops one of two tied tensors and records the survivor in __metadata__.
  for (const [alias, target] of Object.entries((header.__metadata__ ?? {}) as Record<string, string>)) {
    const t = out.get(target);
    if (t && !out.has(alias)) out.set(alias, t);
  }
  return out;
}

export function readSafetensorsF32(path: string, name: string): { shape: number[]; data: Float32Array } {
  const t = readSafetensors(path).get(name);
  if (!t) throw new Error(`${path}: no tensor ${name}`);
  return t;
}
