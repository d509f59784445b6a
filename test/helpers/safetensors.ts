/** Minimal safetensors reader (F32 tensors) for float references in tests. */
import { readFileSync } from 'node:fs';

export function readSafetensors(path: string): Map<string, { shape: number[]; data: Float32Array }> {
  const buf = readFileSync(path);
  const headerLen = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] } | Record<string, string>>;
  const out = new Map<string, { shape: number[]; data: Float32Array }>();
  const base = 8 + headerLen;
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const t = info as { dtype: string; shape: number[]; data_offsets: [number, number] };
    if (t.dtype !== 'F32') throw new Error(`${name}: only F32 is read here (got ${t.dtype})`);
    const bytes = buf.subarray(base + t.data_offsets[0], base + t.data_offsets[1]);
    out.set(name, { shape: t.shape, data: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)) });
  }
  return out;
}
