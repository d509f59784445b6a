/**
 * GGUF header parser (versions 2 and 3): metadata key/values, the tensor table and the data offset.
 * Reads only the header through a ModelSource, growing its window as needed; tensor data stays in the source.
 */
import type { ModelSource } from '../loader/source.ts';
import { BLOCK_GEOMETRY, GgmlType, typeName } from '../../ggml/types.ts';

export type GgufValue = number | bigint | boolean | string | GgufArray;
export type GgufArray =
  | string[]
  | boolean[]
  | number[]
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | GgufValue[];

export interface GgufTensorInfo {
  name: string;
  /** GGML order: dims[0] is the innermost (contiguous) dimension. */
  dims: number[];
  type: GgmlType;
  /** Absolute offset of the tensor's bytes in the file. */
  offset: number;
  byteSize: number;
  elements: number;
}

export interface GgufFile {
  version: number;
  metadata: GgufMetadata;
  tensors: GgufTensorInfo[];
  alignment: number;
  dataOffset: number;
  fileSize: number;
  source: string;
}

export class GgufError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GgufError';
  }
}

const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian

/** Metadata value types as numbered in GGUF (shared with the writer). */
export enum ValueType {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
}

/** Typed access to metadata; every failed lookup names the key and what was found. */
export class GgufMetadata {
  constructor(readonly entries: Map<string, GgufValue>) {}

  has(key: string): boolean {
    return this.entries.has(key);
  }
  get(key: string): GgufValue | undefined {
    return this.entries.get(key);
  }
  string(key: string): string;
  string(key: string, fallback: string): string;
  string(key: string, fallback?: string): string {
    const v = this.entries.get(key);
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v !== 'string') throw new GgufError(`GGUF metadata "${key}" ${v === undefined ? 'is missing' : 'is not a string'}`);
    return v;
  }
  optionalString(key: string): string | undefined {
    const v = this.entries.get(key);
    return typeof v === 'string' ? v : undefined;
  }
  number(key: string): number;
  number(key: string, fallback: number): number;
  number(key: string, fallback?: number): number {
    const v = this.entries.get(key);
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v === 'bigint') return Number(v);
    if (typeof v !== 'number') throw new GgufError(`GGUF metadata "${key}" ${v === undefined ? 'is missing' : 'is not a number'}`);
    return v;
  }
  optionalNumber(key: string): number | undefined {
    const v = this.entries.get(key);
    if (typeof v === 'bigint') return Number(v);
    return typeof v === 'number' ? v : undefined;
  }
  bool(key: string, fallback: boolean): boolean {
    const v = this.entries.get(key);
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') throw new GgufError(`GGUF metadata "${key}" is not a boolean`);
    return v;
  }
  array(key: string): GgufArray {
    const v = this.entries.get(key);
    if (v === undefined || typeof v !== 'object') throw new GgufError(`GGUF metadata "${key}" ${v === undefined ? 'is missing' : 'is not an array'}`);
    return v;
  }
  optionalArray(key: string): GgufArray | undefined {
    const v = this.entries.get(key);
    return v !== undefined && typeof v === 'object' ? v : undefined;
  }
  strings(key: string): string[] {
    const v = this.array(key);
    if (!Array.isArray(v) || (v.length > 0 && typeof v[0] !== 'string')) throw new GgufError(`GGUF metadata "${key}" is not an array of strings`);
    return v as string[];
  }
}

/** Sequential reader over the header that pulls more bytes from the source when it runs out. */
class HeaderReader {
  private buf = new Uint8Array(0);
  private view = new DataView(this.buf.buffer);
  private start = 0; // file offset of buf[0]
  pos = 0; // file offset of the next read
  // ignoreBOM: a token may be exactly U+FEFF (Llama 2 has one); the default decoder would drop it.
  private readonly utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

  constructor(
    private readonly source: ModelSource,
    private readonly fileSize: number,
  ) {}

  private async ensure(n: number, what: string): Promise<void> {
    const end = this.pos + n;
    if (end <= this.start + this.buf.byteLength) return;
    if (end > this.fileSize) {
      throw new GgufError(`${this.source.name}: file is truncated: reading ${what} needs ${n} bytes at offset ${this.pos}, but the file has ${this.fileSize} bytes`);
    }
    // Keep unread bytes, read at least 1 MiB more so the header parses in a few reads.
    const keepFrom = this.pos;
    const want = Math.min(this.fileSize - keepFrom, Math.max(end - keepFrom, 1 << 20));
    const loadedEnd = this.start + this.buf.byteLength;
    const next = new Uint8Array(want);
    let have = 0;
    if (keepFrom < loadedEnd) {
      next.set(this.buf.subarray(keepFrom - this.start));
      have = loadedEnd - keepFrom;
    }
    const more = await this.source.read(keepFrom + have, want - have);
    next.set(more, have);
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
    this.start = keepFrom;
  }

  private at(): number {
    return this.pos - this.start;
  }

  async u32(what: string): Promise<number> {
    await this.ensure(4, what);
    const v = this.view.getUint32(this.at(), true);
    this.pos += 4;
    return v;
  }
  async u64(what: string): Promise<number> {
    await this.ensure(8, what);
    const v = this.view.getBigUint64(this.at(), true);
    this.pos += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError(`${this.source.name}: ${what} is too large (${v})`);
    return Number(v);
  }
  async string(what: string): Promise<string> {
    const len = await this.u64(`${what} length`);
    if (len > this.fileSize) throw new GgufError(`${this.source.name}: ${what} claims ${len} bytes, more than the file holds`);
    await this.ensure(len, what);
    const s = this.utf8.decode(this.buf.subarray(this.at(), this.at() + len));
    this.pos += len;
    return s;
  }

  async scalar(type: ValueType, what: string): Promise<number | bigint | boolean | string> {
    switch (type) {
      case ValueType.STRING:
        return this.string(what);
      case ValueType.BOOL: {
        await this.ensure(1, what);
        const v = this.buf[this.at()] !== 0;
        this.pos += 1;
        return v;
      }
      case ValueType.U64:
      case ValueType.I64: {
        await this.ensure(8, what);
        const v = type === ValueType.U64 ? this.view.getBigUint64(this.at(), true) : this.view.getBigInt64(this.at(), true);
        this.pos += 8;
        return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
      }
      default: {
        const size = SCALAR_SIZE[type];
        if (size === undefined) throw new GgufError(`${this.source.name}: ${what} has unknown value type ${type}`);
        await this.ensure(size, what);
        const o = this.at();
        const d = this.view;
        const v =
          type === ValueType.U8 ? d.getUint8(o)
          : type === ValueType.I8 ? d.getInt8(o)
          : type === ValueType.U16 ? d.getUint16(o, true)
          : type === ValueType.I16 ? d.getInt16(o, true)
          : type === ValueType.U32 ? d.getUint32(o, true)
          : type === ValueType.I32 ? d.getInt32(o, true)
          : type === ValueType.F32 ? d.getFloat32(o, true)
          : d.getFloat64(o, true);
        this.pos += size;
        return v;
      }
    }
  }

  async value(type: ValueType, what: string, depth = 0): Promise<GgufValue> {
    if (type !== ValueType.ARRAY) return this.scalar(type, what);
    if (depth > 8) throw new GgufError(`${this.source.name}: ${what} nests arrays too deeply`);
    const itemType = (await this.u32(`${what} item type`)) as ValueType;
    const count = await this.u64(`${what} count`);
    const size = SCALAR_SIZE[itemType];
    if (size !== undefined) {
      if (count * size > this.fileSize) throw new GgufError(`${this.source.name}: ${what} claims ${count} items, more than the file holds`);
      await this.ensure(count * size, what);
      // Copy so the typed array is aligned and independent of the header window.
      const bytes = this.buf.slice(this.at(), this.at() + count * size);
      this.pos += count * size;
      return typedArray(itemType, bytes, count);
    }
    if (count > this.fileSize) throw new GgufError(`${this.source.name}: ${what} claims ${count} items, more than the file holds`);
    const out: GgufValue[] = new Array(count);
    for (let i = 0; i < count; i++) out[i] = await this.value(itemType, what, depth + 1);
    return out as GgufArray;
  }
}

const SCALAR_SIZE: Partial<Record<ValueType, number>> = {
  [ValueType.U8]: 1,
  [ValueType.I8]: 1,
  [ValueType.U16]: 2,
  [ValueType.I16]: 2,
  [ValueType.U32]: 4,
  [ValueType.I32]: 4,
  [ValueType.F32]: 4,
  [ValueType.F64]: 8,
};

function typedArray(type: ValueType, bytes: Uint8Array, count: number): GgufArray {
  const b = bytes.buffer;
  switch (type) {
    case ValueType.U8:
      return new Uint8Array(b, 0, count);
    case ValueType.I8:
      return new Int8Array(b, 0, count);
    case ValueType.U16:
      return new Uint16Array(b, 0, count);
    case ValueType.I16:
      return new Int16Array(b, 0, count);
    case ValueType.U32:
      return new Uint32Array(b, 0, count);
    case ValueType.I32:
      return new Int32Array(b, 0, count);
    case ValueType.F32:
      return new Float32Array(b, 0, count);
    case ValueType.F64:
      return new Float64Array(b, 0, count);
    default:
      throw new GgufError(`no typed array for value type ${type}`);
  }
}

export async function parseGguf(source: ModelSource): Promise<GgufFile> {
  const fileSize = await source.size();
  if (fileSize < 8) throw new GgufError(`${source.name}: not a GGUF file (only ${fileSize} bytes)`);
  const r = new HeaderReader(source, fileSize);
  const magic = await r.u32('magic');
  if (magic !== GGUF_MAGIC) {
    const head = await source.read(0, 4);
    const shown = Array.from(head, (c) => (c >= 32 && c < 127 ? String.fromCharCode(c) : '.')).join('');
    throw new GgufError(`${source.name}: not a GGUF file (starts with "${shown}", expected "GGUF")`);
  }
  const version = await r.u32('version');
  if (version > 0xffff && (version & 0xffff) === 0) {
    throw new GgufError(`${source.name}: GGUF file is big-endian (version reads as ${version}, byte-swapped ${version >>> 24}); only little-endian files are supported`);
  }
  if (version !== 2 && version !== 3) {
    throw new GgufError(`${source.name}: GGUF version ${version} is not supported (only versions 2 and 3)`);
  }
  const tensorCount = await r.u64('tensor count');
  const kvCount = await r.u64('metadata count');
  if (tensorCount > 1_000_000 || kvCount > 1_000_000) {
    throw new GgufError(`${source.name}: implausible header (${tensorCount} tensors, ${kvCount} metadata entries): file is corrupt`);
  }
  const entries = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = await r.string(`metadata key ${i}`);
    if (entries.has(key)) throw new GgufError(`${source.name}: metadata key "${key}" appears twice (entries ${[...entries.keys()].indexOf(key)} and ${i})`);
    const type = (await r.u32(`type of "${key}"`)) as ValueType;
    entries.set(key, await r.value(type, `metadata "${key}"`));
  }
  const metadata = new GgufMetadata(entries);
  const alignment = metadata.number('general.alignment', 32);
  if (!(alignment > 0 && (alignment & (alignment - 1)) === 0)) throw new GgufError(`${source.name}: general.alignment ${alignment} is not a power of two`);

  const raw: { name: string; dims: number[]; type: number; rel: number; elements: number }[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const name = await r.string(`tensor ${i} name`);
    if (seen.has(name)) throw new GgufError(`${source.name}: tensor name "${name}" appears twice in the tensor table`);
    seen.add(name);
    const nDims = await r.u32(`tensor "${name}" dimension count`);
    if (nDims < 1 || nDims > 4) throw new GgufError(`${source.name}: tensor "${name}" has ${nDims} dimensions (1 to 4 allowed)`);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(await r.u64(`tensor "${name}" dimension ${d}`));
    // Guards the element count and byte size below from silent float rounding on absurd shapes.
    const elements = dims.reduce((a, b) => a * b, 1);
    if (elements > Number.MAX_SAFE_INTEGER) {
      throw new GgufError(`${source.name}: tensor "${name}" has an implausible shape [${dims.join(', ')}]: file is corrupt`);
    }
    const type = await r.u32(`tensor "${name}" type`);
    const rel = await r.u64(`tensor "${name}" offset`);
    // Tensor data must start on the alignment (llama.cpp requires it too); GPU uploads rely on it.
    if (rel % alignment !== 0) throw new GgufError(`${source.name}: tensor "${name}" data offset ${rel} is not a multiple of the alignment ${alignment}`);
    raw.push({ name, dims, type, rel, elements });
  }
  const dataOffset = Math.ceil(r.pos / alignment) * alignment;
  const tensors: GgufTensorInfo[] = raw.map(({ name, dims, type, rel, elements }) => {
    const g = BLOCK_GEOMETRY[type as GgmlType];
    // Unknown types are kept in the table (with size 0) so the loader can name them in its error.
    let byteSize = 0;
    if (g) {
      if (dims[0] % g.elements !== 0) {
        throw new GgufError(`${source.name}: tensor "${name}" row of ${dims[0]} is not a multiple of the ${typeName(type)} block (${g.elements})`);
      }
      byteSize = (elements / g.elements) * g.bytes;
    }
    const offset = dataOffset + rel;
    if (g && offset + byteSize > fileSize) {
      throw new GgufError(`${source.name}: file is truncated: tensor "${name}" needs bytes ${offset}..${offset + byteSize} but the file has ${fileSize}`);
    }
    return { name, dims, type: type as GgmlType, offset, byteSize, elements };
  });
  return { version, metadata, tensors, alignment, dataOffset, fileSize, source: source.name };
}
