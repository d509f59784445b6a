/**
 * The trainer's resumable state as bytes: "SVCLORA\x01", a u32 (little-endian) byte length of a JSON header
 * (padded with spaces to a multiple of 4), the header, then parameters, AdamW first and second moments as
 * f32 arrays of parameterCount values each, in the layout of lora-layout.ts. The header names the shape
 * and every matrix, so a state is refused by a trainer of another shape or model instead of read wrongly.
 */
import type { LoraLayout } from './lora-layout.ts';

const MAGIC = [0x53, 0x56, 0x43, 0x4c, 0x4f, 0x52, 0x41, 0x01];

export interface StateHeader {
  format: 1;
  architecture: string;
  rank: number;
  alpha: number;
  /** [layer, target, in, out] per matrix, in layout order. */
  matrices: [number, string, number, number][];
  parameterCount: number;
  step: number;
}

export interface TrainerState {
  header: StateHeader;
  params: Float32Array;
  m: Float32Array;
  v: Float32Array;
}

export function stateHeader(architecture: string, alpha: number, layout: LoraLayout, step: number): StateHeader {
  return {
    format: 1,
    architecture,
    rank: layout.rank,
    alpha,
    matrices: layout.slots.map((s) => [s.layer, s.target, s.inDim, s.outDim]),
    parameterCount: layout.parameterCount,
    step,
  };
}

export function encodeState(s: TrainerState): Uint8Array {
  let json = JSON.stringify(s.header);
  while ((8 + 4 + json.length) % 4 !== 0) json += ' ';
  const head = new TextEncoder().encode(json);
  if (head.length !== json.length) throw new Error('trainer state header must be ASCII');
  const n = s.header.parameterCount;
  const out = new Uint8Array(12 + head.length + 3 * n * 4);
  out.set(MAGIC, 0);
  new DataView(out.buffer).setUint32(8, head.length, true);
  out.set(head, 12);
  const floats = new Float32Array(out.buffer, 12 + head.length, 3 * n);
  floats.set(s.params, 0);
  floats.set(s.m, n);
  floats.set(s.v, 2 * n);
  return out;
}

/** Parses a state and checks it against the header this trainer would write (all but the step). */
export function decodeState(bytes: Uint8Array, expected: StateHeader): TrainerState {
  if (bytes.length < 12 || MAGIC.some((b, i) => bytes[i] !== b)) throw new Error('not a LoRA trainer state (bad magic bytes)');
  const len = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(8, true);
  if (12 + len > bytes.length) throw new Error(`LoRA trainer state is truncated: header of ${len} bytes in ${bytes.length}`);
  let header: StateHeader;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + len))) as StateHeader;
  } catch (e) {
    throw new Error(`LoRA trainer state header is not JSON: ${(e as Error).message}`);
  }
  if (header.format !== 1) throw new Error(`LoRA trainer state format ${header.format} is not supported (expected 1)`);
  for (const key of ['architecture', 'rank', 'alpha'] as const) {
    if (header[key] !== expected[key]) throw new Error(`LoRA trainer state has ${key} ${header[key]}, this trainer ${expected[key]}`);
  }
  if (!Array.isArray(header.matrices) || JSON.stringify(header.matrices) !== JSON.stringify(expected.matrices)) {
    throw new Error(`LoRA trainer state adapts other matrices (${summary(header.matrices ?? [])}) than this trainer (${summary(expected.matrices)})`);
  }
  if (header.parameterCount !== expected.parameterCount) throw new Error(`LoRA trainer state has ${header.parameterCount} parameters, this trainer ${expected.parameterCount}`);
  if (!Number.isInteger(header.step) || header.step < 0) throw new Error(`LoRA trainer state has a bad step count ${header.step}`);
  const n = header.parameterCount;
  const need = 12 + len + 3 * n * 4;
  if (bytes.length !== need) throw new Error(`LoRA trainer state has ${bytes.length} bytes, expected ${need}`);
  // Copy: the input's offset need not be 4-aligned.
  const floats = new Float32Array(bytes.slice(12 + len).buffer);
  return { header, params: floats.slice(0, n), m: floats.slice(n, 2 * n), v: floats.slice(2 * n, 3 * n) };
}

function summary(m: StateHeader['matrices']): string {
  const targets = [...new Set(m.map((x) => x[1]))].join(',');
  const layers = new Set(m.map((x) => x[0])).size;
  return `${m.length} matrices: ${targets} in ${layers} layers`;
}
