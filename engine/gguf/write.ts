/**
 * GGUF writer (versions 3 and 2, little-endian). Lays files out the way llama.cpp reads them: the header, then
 * each tensor's data in table order, every tensor starting on the alignment and padded to it.
 * `writeGguf` streams to any sink, so a multi-gigabyte model never sits in memory; `encodeGguf` builds small
 * files in memory for tests. Web APIs only: Node file sinks live in the loader's `*-node.ts` files.
 */
import { ValueType } from './parse.ts';
import { BLOCK_GEOMETRY, GgmlType, typeName } from '../../ggml/types.ts';

export type GgufScalarTypeName = 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'f32' | 'bool' | 'string' | 'u64' | 'i64' | 'f64';

/** A scalar with its GGUF type spelled out: a JS number alone does not say whether it is u32, i32 or f32. */
export interface GgufTypedScalar {
  type: GgufScalarTypeName;
  value: number | bigint | boolean | string;
}

/** An array whose items are plain JS values of `itemType`, or (itemType 'array') nested array values. */
export interface GgufTypedArray {
  type: 'array';
  itemType: GgufScalarTypeName | 'array';
  items: readonly (number | bigint | boolean | string | GgufWriteValue)[];
}

/**
 * A metadata value. Strings, booleans, string arrays and typed arrays carry their own GGUF type;
 * numbers must be wrapped (see `gv`) because llama.cpp checks each key's exact type.
 */
export type GgufWriteValue =
  | string
  | boolean
  | readonly string[]
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array
  | GgufTypedScalar
  | GgufTypedArray;

/** Constructors for typed metadata values: `gv.u32(2048)`, `gv.f32(1e-5)`, `gv.array('i32', [1, 2])`. */
export const gv = {
  u8: (value: number): GgufTypedScalar => ({ type: 'u8', value }),
  i8: (value: number): GgufTypedScalar => ({ type: 'i8', value }),
  u16: (value: number): GgufTypedScalar => ({ type: 'u16', value }),
  i16: (value: number): GgufTypedScalar => ({ type: 'i16', value }),
  u32: (value: number): GgufTypedScalar => ({ type: 'u32', value }),
  i32: (value: number): GgufTypedScalar => ({ type: 'i32', value }),
  f32: (value: number): GgufTypedScalar => ({ type: 'f32', value }),
  u64: (value: number | bigint): GgufTypedScalar => ({ type: 'u64', value }),
  i64: (value: number | bigint): GgufTypedScalar => ({ type: 'i64', value }),
  f64: (value: number): GgufTypedScalar => ({ type: 'f64', value }),
  bool: (value: boolean): GgufTypedScalar => ({ type: 'bool', value }),
  string: (value: string): GgufTypedScalar => ({ type: 'string', value }),
  array: (itemType: GgufTypedArray['itemType'], items: GgufTypedArray['items']): GgufTypedArray => ({ type: 'array', itemType, items }),
};

export interface GgufTensorSpec {
  name: string;
  /** GGML order: dims[0] is the innermost (contiguous) dimension. */
  dims: readonly number[];
  type: GgmlType;
  /** Only for types without a known block size (test files with unknown types); otherwise derived from dims. */
  byteSize?: number;
}

export interface GgufWriteSpec {
  /** 3 unless told; version 2 has the same little-endian layout. */
  version?: 2 | 3;
  /** Written in this order. `general.alignment`, when given, must be a u32 and agree with `alignment`. */
  metadata: Iterable<readonly [string, GgufWriteValue]> | Readonly<Record<string, GgufWriteValue>>;
  tensors: readonly GgufTensorSpec[];
  /** Tensor data alignment in bytes, a power of two; 32 (GGUF's default) unless told. Non-default values are recorded as `general.alignment`. */
  alignment?: number;
}

/** Where each part of the file lands; offsets are absolute. */
export interface GgufLayout {
  headerBytes: number;
  dataOffset: number;
  fileSize: number;
  tensors: { name: string; offset: number; byteSize: number }[];
}

/** Anything that takes bytes in order: a Node FileHandle-backed sink, a WritableStream writer, an array. */
export interface GgufSink {
  write(chunk: Uint8Array): unknown;
}

/** One tensor's bytes: all at once, or in chunks (a generator), so big tensors can be produced piece by piece. */
export type GgufTensorBytes = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

export class GgufWriteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GgufWriteError';
  }
}

const GGUF_MAGIC = 0x46554747;
const DEFAULT_ALIGNMENT = 32;
/** llama.cpp's GGML_MAX_NAME (64) includes the terminating NUL. */
const MAX_TENSOR_NAME_BYTES = 63;

const SCALAR: Record<GgufScalarTypeName, { code: ValueType; bytes: number }> = {
  u8: { code: ValueType.U8, bytes: 1 },
  i8: { code: ValueType.I8, bytes: 1 },
  u16: { code: ValueType.U16, bytes: 2 },
  i16: { code: ValueType.I16, bytes: 2 },
  u32: { code: ValueType.U32, bytes: 4 },
  i32: { code: ValueType.I32, bytes: 4 },
  f32: { code: ValueType.F32, bytes: 4 },
  bool: { code: ValueType.BOOL, bytes: 1 },
  string: { code: ValueType.STRING, bytes: 0 },
  u64: { code: ValueType.U64, bytes: 8 },
  i64: { code: ValueType.I64, bytes: 8 },
  f64: { code: ValueType.F64, bytes: 8 },
};

const INT_RANGE: Partial<Record<GgufScalarTypeName, [number, number]>> = {
  u8: [0, 0xff],
  i8: [-0x80, 0x7f],
  u16: [0, 0xffff],
  i16: [-0x8000, 0x7fff],
  u32: [0, 0xffffffff],
  i32: [-0x80000000, 0x7fffffff],
};

/** Growable little-endian byte buffer for the header. */
class ByteWriter {
  private buf = new Uint8Array(1 << 16);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private readonly utf8 = new TextEncoder();

  private reserve(n: number): void {
    if (this.length + n <= this.buf.byteLength) return;
    let cap = this.buf.byteLength * 2;
    while (cap < this.length + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number): void {
    this.reserve(1);
    this.view.setUint8(this.length, v);
    this.length += 1;
  }
  u32(v: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, v, true);
    this.length += 4;
  }
  u64(v: number | bigint): void {
    this.reserve(8);
    this.view.setBigUint64(this.length, BigInt(v), true);
    this.length += 8;
  }
  string(s: string): void {
    const bytes = this.utf8.encode(s);
    this.u64(bytes.byteLength);
    this.reserve(bytes.byteLength);
    this.buf.set(bytes, this.length);
    this.length += bytes.byteLength;
  }
  /** One scalar of a fixed-size type; `what` names the key for errors. */
  scalar(type: GgufScalarTypeName, v: unknown, what: string): void {
    if (type === 'string') {
      if (typeof v !== 'string') throw new GgufWriteError(`${what}: expected a string, found ${describe(v)}`);
      this.string(v);
      return;
    }
    if (type === 'bool') {
      if (typeof v !== 'boolean') throw new GgufWriteError(`${what}: expected a boolean, found ${describe(v)}`);
      this.u8(v ? 1 : 0);
      return;
    }
    if (type === 'u64' || type === 'i64') {
      if (typeof v !== 'bigint' && !(typeof v === 'number' && Number.isSafeInteger(v))) {
        throw new GgufWriteError(`${what}: expected an integer (number or bigint) for ${type}, found ${describe(v)}`);
      }
      const b = BigInt(v);
      const [lo, hi] = type === 'u64' ? [0n, (1n << 64n) - 1n] : [-(1n << 63n), (1n << 63n) - 1n];
      if (b < lo || b > hi) throw new GgufWriteError(`${what}: ${b} is out of range for ${type}`);
      this.reserve(8);
      if (type === 'u64') this.view.setBigUint64(this.length, b, true);
      else this.view.setBigInt64(this.length, b, true);
      this.length += 8;
      return;
    }
    if (typeof v !== 'number') throw new GgufWriteError(`${what}: expected a number for ${type}, found ${describe(v)}`);
    const range = INT_RANGE[type];
    if (range && !(Number.isInteger(v) && v >= range[0] && v <= range[1])) {
      throw new GgufWriteError(`${what}: ${v} is not a ${type} (integers ${range[0]}..${range[1]})`);
    }
    const { bytes } = SCALAR[type];
    this.reserve(bytes);
    const o = this.length;
    const d = this.view;
    if (type === 'u8') d.setUint8(o, v);
    else if (type === 'i8') d.setInt8(o, v);
    else if (type === 'u16') d.setUint16(o, v, true);
    else if (type === 'i16') d.setInt16(o, v, true);
    else if (type === 'u32') d.setUint32(o, v, true);
    else if (type === 'i32') d.setInt32(o, v, true);
    else if (type === 'f32') d.setFloat32(o, v, true);
    else d.setFloat64(o, v, true);
    this.length += bytes;
  }
  padTo(alignment: number): void {
    const target = Math.ceil(this.length / alignment) * alignment;
    this.reserve(target - this.length);
    this.buf.fill(0, this.length, target);
    this.length = target;
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (typeof v === 'object') return `an object with keys ${Object.keys(v as object).join(', ') || '(none)'}`;
  return `${typeof v} ${String(v)}`;
}

const TYPED_ARRAY_ITEM: [new (...args: never[]) => ArrayBufferView, GgufScalarTypeName][] = [
  [Uint8Array, 'u8'],
  [Int8Array, 'i8'],
  [Uint16Array, 'u16'],
  [Int16Array, 'i16'],
  [Uint32Array, 'u32'],
  [Int32Array, 'i32'],
  [Float32Array, 'f32'],
  [Float64Array, 'f64'],
  [BigUint64Array, 'u64'],
  [BigInt64Array, 'i64'],
];

/** The GGUF type of a value plus, for arrays, the item type and the items to write. */
type Classified =
  | { kind: 'scalar'; type: GgufScalarTypeName; value: unknown }
  | { kind: 'array'; itemType: GgufScalarTypeName | 'array'; items: ArrayLike<unknown> };

function classify(v: GgufWriteValue, what: string): Classified {
  if (typeof v === 'string') return { kind: 'scalar', type: 'string', value: v };
  if (typeof v === 'boolean') return { kind: 'scalar', type: 'bool', value: v };
  if (Array.isArray(v)) {
    const bad = v.findIndex((s) => typeof s !== 'string');
    if (bad >= 0) throw new GgufWriteError(`${what}: a plain array must hold strings (item ${bad} is ${describe(v[bad])}); wrap other arrays with gv.array(type, items)`);
    return { kind: 'array', itemType: 'string', items: v };
  }
  if (ArrayBuffer.isView(v)) {
    const hit = TYPED_ARRAY_ITEM.find(([ctor]) => v instanceof ctor);
    if (!hit) throw new GgufWriteError(`${what}: ${v.constructor.name} has no GGUF array type`);
    return { kind: 'array', itemType: hit[1], items: v as unknown as ArrayLike<unknown> };
  }
  if (typeof v === 'object' && v !== null && 'type' in v) {
    if (v.type === 'array') {
      const a = v as GgufTypedArray;
      if (a.itemType !== 'array' && !(a.itemType in SCALAR)) throw new GgufWriteError(`${what}: unknown array item type "${String(a.itemType)}"`);
      return { kind: 'array', itemType: a.itemType, items: a.items };
    }
    if (!(v.type in SCALAR)) throw new GgufWriteError(`${what}: unknown value type "${String(v.type)}"`);
    return { kind: 'scalar', type: v.type, value: (v as GgufTypedScalar).value };
  }
  throw new GgufWriteError(`${what}: cannot infer a GGUF type for ${describe(v)}; wrap numbers with gv.u32(), gv.f32(), ...`);
}

function typeCode(c: Classified): ValueType {
  return c.kind === 'array' ? ValueType.ARRAY : SCALAR[c.type].code;
}

/** Writes a value's body (not its type code): arrays as item type, count, items. */
function writeValue(w: ByteWriter, c: Classified, what: string, depth: number): void {
  if (c.kind === 'scalar') {
    w.scalar(c.type, c.value, what);
    return;
  }
  if (depth > 8) throw new GgufWriteError(`${what}: arrays nested more than 8 deep`);
  const n = c.items.length;
  if (c.itemType !== 'array') {
    w.u32(SCALAR[c.itemType].code);
    w.u64(n);
    for (let i = 0; i < n; i++) w.scalar(c.itemType, c.items[i], `${what}[${i}]`);
    return;
  }
  // Nested: GGUF stores one item type for the outer array; each inner array carries its own.
  w.u32(ValueType.ARRAY);
  w.u64(n);
  for (let i = 0; i < n; i++) {
    const inner = classify(c.items[i] as GgufWriteValue, `${what}[${i}]`);
    if (inner.kind !== 'array') throw new GgufWriteError(`${what}[${i}]: items of an array of arrays must be arrays, found ${describe(c.items[i])}`);
    writeValue(w, inner, `${what}[${i}]`, depth + 1);
  }
}

function metadataEntries(m: GgufWriteSpec['metadata']): (readonly [string, GgufWriteValue])[] {
  return Symbol.iterator in m ? [...(m as Iterable<readonly [string, GgufWriteValue]>)] : Object.entries(m as Record<string, GgufWriteValue>);
}

function tensorBytes(t: GgufTensorSpec): number {
  const what = `tensor "${t.name}"`;
  if (t.dims.length < 1 || t.dims.length > 4) throw new GgufWriteError(`${what}: ${t.dims.length} dimensions (1 to 4 allowed)`);
  for (const d of t.dims) if (!Number.isSafeInteger(d) || d < 0) throw new GgufWriteError(`${what}: dimension ${d} is not a non-negative integer`);
  const elements = t.dims.reduce((a, b) => a * b, 1);
  const g = BLOCK_GEOMETRY[t.type];
  if (!g) {
    if (t.byteSize === undefined) throw new GgufWriteError(`${what}: type ${typeName(t.type)} has no known block size; give byteSize`);
    return t.byteSize;
  }
  if (t.dims[0] % g.elements !== 0) throw new GgufWriteError(`${what}: row of ${t.dims[0]} is not a multiple of the ${typeName(t.type)} block (${g.elements})`);
  const size = (elements / g.elements) * g.bytes;
  if (t.byteSize !== undefined && t.byteSize !== size) throw new GgufWriteError(`${what}: byteSize ${t.byteSize} disagrees with ${typeName(t.type)} [${t.dims.join(', ')}] = ${size} bytes`);
  return size;
}

/** Serializes the header (padded to the alignment) and computes where every tensor goes. */
export function planGguf(spec: GgufWriteSpec): { header: Uint8Array; layout: GgufLayout } {
  const version = spec.version ?? 3;
  if (version !== 2 && version !== 3) throw new GgufWriteError(`GGUF version ${String(version)} cannot be written (2 or 3)`);
  const entries = metadataEntries(spec.metadata);
  const keys = new Set<string>();
  for (const [key] of entries) {
    if (!key) throw new GgufWriteError('metadata key is empty');
    if (keys.has(key)) throw new GgufWriteError(`metadata key "${key}" is given twice`);
    keys.add(key);
  }

  const given = entries.find(([k]) => k === 'general.alignment')?.[1];
  let alignment = spec.alignment ?? DEFAULT_ALIGNMENT;
  if (given !== undefined) {
    const c = classify(given, 'metadata "general.alignment"');
    // llama.cpp aborts on any other type for this key.
    if (c.kind !== 'scalar' || c.type !== 'u32') throw new GgufWriteError(`metadata "general.alignment" must be gv.u32(...), found ${describe(given)}`);
    if (spec.alignment !== undefined && spec.alignment !== c.value) throw new GgufWriteError(`alignment ${spec.alignment} disagrees with metadata "general.alignment" ${String(c.value)}`);
    alignment = c.value as number;
  }
  if (!(Number.isSafeInteger(alignment) && alignment > 0 && (alignment & (alignment - 1)) === 0)) {
    throw new GgufWriteError(`alignment ${alignment} is not a power of two`);
  }
  if (given === undefined && alignment !== DEFAULT_ALIGNMENT) entries.push(['general.alignment', gv.u32(alignment)]);

  const w = new ByteWriter();
  w.u32(GGUF_MAGIC);
  w.u32(version);
  w.u64(spec.tensors.length);
  w.u64(entries.length);
  for (const [key, value] of entries) {
    const what = `metadata "${key}"`;
    const c = classify(value, what);
    w.string(key);
    w.u32(typeCode(c));
    writeValue(w, c, what, 0);
  }

  const names = new Set<string>();
  const utf8 = new TextEncoder();
  const placed: GgufLayout['tensors'] = [];
  let rel = 0;
  for (const t of spec.tensors) {
    if (!t.name) throw new GgufWriteError('tensor name is empty');
    if (utf8.encode(t.name).byteLength > MAX_TENSOR_NAME_BYTES) throw new GgufWriteError(`tensor "${t.name}": name is longer than ${MAX_TENSOR_NAME_BYTES} bytes (llama.cpp limit)`);
    if (names.has(t.name)) throw new GgufWriteError(`tensor "${t.name}" is given twice`);
    names.add(t.name);
    const byteSize = tensorBytes(t);
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.type);
    w.u64(rel);
    placed.push({ name: t.name, offset: rel, byteSize });
    rel += Math.ceil(byteSize / alignment) * alignment;
  }
  w.padTo(alignment);
  const dataOffset = w.length;
  for (const p of placed) p.offset += dataOffset;
  return { header: w.bytes(), layout: { headerBytes: dataOffset, dataOffset, fileSize: dataOffset + rel, tensors: placed } };
}

async function* chunksOf(bytes: GgufTensorBytes): AsyncIterable<Uint8Array> {
  if (bytes instanceof Uint8Array) yield bytes;
  else yield* bytes as AsyncIterable<Uint8Array>;
}

/**
 * Streams a GGUF file to `sink`: the header first, then `tensorData(tensor, index)` for each tensor in table order,
 * each padded to the alignment. Each tensor must yield exactly its size; the sink's writes are awaited in turn,
 * so a producer may reuse its chunk buffer once the next chunk is asked for.
 */
export async function writeGguf(
  sink: GgufSink,
  spec: GgufWriteSpec,
  tensorData: (tensor: GgufTensorSpec, index: number) => GgufTensorBytes | Promise<GgufTensorBytes>,
): Promise<GgufLayout> {
  const { header, layout } = planGguf(spec);
  await sink.write(header);
  let pos = header.byteLength;
  for (let i = 0; i < spec.tensors.length; i++) {
    const t = spec.tensors[i];
    const { offset, byteSize } = layout.tensors[i];
    if (pos < offset) {
      await sink.write(new Uint8Array(offset - pos));
      pos = offset;
    }
    let got = 0;
    for await (const chunk of chunksOf(await tensorData(t, i))) {
      if (got + chunk.byteLength > byteSize) {
        throw new GgufWriteError(`tensor "${t.name}" (${typeName(t.type)} [${t.dims.join(', ')}]): data runs past its ${byteSize} bytes (at least ${got + chunk.byteLength})`);
      }
      if (chunk.byteLength > 0) await sink.write(chunk);
      got += chunk.byteLength;
    }
    if (got !== byteSize) throw new GgufWriteError(`tensor "${t.name}" (${typeName(t.type)} [${t.dims.join(', ')}]): expected ${byteSize} bytes of data, got ${got}`);
    pos += got;
  }
  if (pos < layout.fileSize) await sink.write(new Uint8Array(layout.fileSize - pos));
  return layout;
}

/** A whole GGUF file in memory, for tests and small fixtures. */
export function encodeGguf(spec: Omit<GgufWriteSpec, 'tensors'> & { tensors: readonly (GgufTensorSpec & { data: Uint8Array })[] }): Uint8Array {
  const { header, layout } = planGguf(spec);
  const out = new Uint8Array(layout.fileSize);
  out.set(header);
  spec.tensors.forEach((t, i) => {
    const { offset, byteSize } = layout.tensors[i];
    if (t.data.byteLength !== byteSize) throw new GgufWriteError(`tensor "${t.name}" (${typeName(t.type)} [${t.dims.join(', ')}]): expected ${byteSize} bytes of data, got ${t.data.byteLength}`);
    out.set(t.data, offset);
  });
  return out;
}
