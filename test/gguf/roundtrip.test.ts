import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { GgmlType } from '../../ggml/types.ts';
import { encodeGguf, gv, planGguf, writeGguf, GgufWriteError, type GgufWriteSpec } from '../../engine/gguf/write.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { writeFileAtomically } from '../../engine/loader/file-sink-node.ts';
import { BytesSource } from '../../engine/loader/source.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-gguf-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Every GGUF value type, as scalars, typed arrays, plain arrays and nested arrays. */
const ALL_VALUES: GgufWriteSpec['metadata'] = [
  ['t.u8', gv.u8(255)],
  ['t.i8', gv.i8(-128)],
  ['t.u16', gv.u16(65535)],
  ['t.i16', gv.i16(-32768)],
  ['t.u32', gv.u32(4294967295)],
  ['t.i32', gv.i32(-2147483648)],
  ['t.f32', gv.f32(1e-5)],
  ['t.f64', gv.f64(Math.PI)],
  ['t.bool.true', true],
  ['t.bool.false', gv.bool(false)],
  ['t.string', 'héllo, wörld ✓ 🦙'],
  ['t.string.empty', ''],
  ['t.u64.small', gv.u64(12345)],
  ['t.u64.big', gv.u64(2n ** 64n - 1n)],
  ['t.i64.neg', gv.i64(-5)],
  ['t.i64.min', gv.i64(-(2n ** 63n))],
  ['t.arr.u8', new Uint8Array([0, 1, 255])],
  ['t.arr.i8', new Int8Array([-128, 0, 127])],
  ['t.arr.u16', new Uint16Array([0, 65535])],
  ['t.arr.i16', new Int16Array([-32768, 32767])],
  ['t.arr.u32', new Uint32Array([0, 4294967295])],
  ['t.arr.i32', new Int32Array([-1, 2, 3])],
  ['t.arr.f32', new Float32Array([0.5, -1.25, 3e38])],
  ['t.arr.f64', new Float64Array([Math.E, -0])],
  ['t.arr.u64', new BigUint64Array([1n, 2n ** 60n])],
  ['t.arr.i64', new BigInt64Array([-1n, -(2n ** 62n)])],
  ['t.arr.bool', gv.array('bool', [true, false, true])],
  ['t.arr.string', ['a', '', 'ß', 'Ġthe']],
  ['t.arr.empty', gv.array('u32', [])],
  ['t.arr.nested', gv.array('array', [new Int32Array([1, 2]), ['x', 'y'], gv.array('array', [gv.array('f32', [0.25])])])],
];

function tensors() {
  const f32 = new Float32Array([1, 2, 3, 4, 5, 6]);
  const f16 = new Uint8Array(2 * 64).map((_, i) => i);
  const q8 = new Uint8Array(34 * 2).map((_, i) => (i * 7) & 255);
  const q4 = new Uint8Array(18).map((_, i) => 255 - i);
  return [
    { name: 'a.f32', dims: [3, 2], type: GgmlType.F32, data: new Uint8Array(f32.buffer) },
    { name: 'b.f16', dims: [64], type: GgmlType.F16, data: f16 },
    { name: 'c.q8_0', dims: [32, 2], type: GgmlType.Q8_0, data: q8 },
    { name: 'd.q4_0', dims: [32, 1, 1, 1], type: GgmlType.Q4_0, data: q4 },
  ];
}

async function checkRoundTrip(bytes: Uint8Array, version: number, alignment: number) {
  const g = await parseGguf(new BytesSource(bytes, 'roundtrip'));
  expect(g.version).toBe(version);
  expect(g.alignment).toBe(alignment);
  expect(g.dataOffset % alignment).toBe(0);
  const m = g.metadata;
  expect(m.number('t.u8')).toBe(255);
  expect(m.number('t.i8')).toBe(-128);
  expect(m.number('t.u16')).toBe(65535);
  expect(m.number('t.i16')).toBe(-32768);
  expect(m.number('t.u32')).toBe(4294967295);
  expect(m.number('t.i32')).toBe(-2147483648);
  expect(m.number('t.f32')).toBe(Math.fround(1e-5));
  expect(m.number('t.f64')).toBe(Math.PI);
  expect(m.get('t.bool.true')).toBe(true);
  expect(m.get('t.bool.false')).toBe(false);
  expect(m.string('t.string')).toBe('héllo, wörld ✓ 🦙');
  expect(m.string('t.string.empty')).toBe('');
  expect(m.get('t.u64.small')).toBe(12345);
  expect(m.get('t.u64.big')).toBe(2n ** 64n - 1n);
  expect(m.get('t.i64.neg')).toBe(-5);
  expect(m.get('t.i64.min')).toBe(-(2n ** 63n));
  expect(m.get('t.arr.u8')).toEqual(new Uint8Array([0, 1, 255]));
  expect(m.get('t.arr.i8')).toEqual(new Int8Array([-128, 0, 127]));
  expect(m.get('t.arr.u16')).toEqual(new Uint16Array([0, 65535]));
  expect(m.get('t.arr.i16')).toEqual(new Int16Array([-32768, 32767]));
  expect(m.get('t.arr.u32')).toEqual(new Uint32Array([0, 4294967295]));
  expect(m.get('t.arr.i32')).toEqual(new Int32Array([-1, 2, 3]));
  expect(m.get('t.arr.f32')).toEqual(new Float32Array([0.5, -1.25, 3e38]));
  expect(Array.from(m.get('t.arr.f64') as Float64Array)).toEqual([Math.E, -0]);
  // The parser gives 64-bit items as numbers when they are exact, bigints otherwise.
  expect(m.get('t.arr.u64')).toEqual([1, 2n ** 60n]);
  expect(m.get('t.arr.i64')).toEqual([-1, -(2n ** 62n)]);
  expect(m.get('t.arr.bool')).toEqual([true, false, true]);
  expect(m.strings('t.arr.string')).toEqual(['a', '', 'ß', 'Ġthe']);
  expect(m.get('t.arr.empty')).toEqual(new Uint32Array([]));
  expect(m.get('t.arr.nested')).toEqual([new Int32Array([1, 2]), ['x', 'y'], [new Float32Array([0.25])]]);

  const want = tensors();
  expect(g.tensors.map((t) => [t.name, t.dims, t.type, t.byteSize])).toEqual(want.map((t) => [t.name, t.dims, t.type, t.data.byteLength]));
  let expectedOffset = g.dataOffset;
  for (const [i, t] of g.tensors.entries()) {
    // llama.cpp requires each tensor right after the previous one, padded to the alignment.
    expect(t.offset).toBe(expectedOffset);
    expectedOffset += Math.ceil(t.byteSize / alignment) * alignment;
    expect(bytes.subarray(t.offset, t.offset + t.byteSize)).toEqual(want[i].data);
  }
  expect(g.fileSize).toBe(expectedOffset);
}

describe('GGUF writer → parser round trip', () => {
  for (const version of [3, 2] as const) {
    for (const alignment of [32, 64, 1, 4096]) {
      it(`keeps every value type, tensor and offset (v${version}, alignment ${alignment})`, async () => {
        const bytes = encodeGguf({ version, alignment, metadata: ALL_VALUES, tensors: tensors() });
        await checkRoundTrip(bytes, version, alignment);
        const g = await parseGguf(new BytesSource(bytes));
        expect(g.metadata.has('general.alignment')).toBe(alignment !== 32);
      });
    }
  }

  it('accepts general.alignment given as metadata (a u32) and takes it as the alignment', async () => {
    const bytes = encodeGguf({ metadata: [...(ALL_VALUES as [string, never][]), ['general.alignment', gv.u32(128)]], tensors: tensors() });
    await checkRoundTrip(bytes, 3, 128);
  });

  it('streams to a file chunk by chunk and gives the same bytes as the in-memory writer', async () => {
    const path = join(dir, 'streamed.gguf');
    const spec = { alignment: 64, metadata: ALL_VALUES, tensors: tensors().map(({ name, dims, type }) => ({ name, dims, type })) };
    const data = tensors();
    const layout = await writeFileAtomically(path, (sink) =>
      writeGguf(sink, spec, function* (_t, i) {
        // Odd-sized pieces, to prove chunk boundaries don't matter.
        const d = data[i].data;
        for (let at = 0; at < d.byteLength; at += 5) yield d.subarray(at, Math.min(at + 5, d.byteLength));
      }),
    );
    const onDisk = new Uint8Array(await readFile(path));
    expect(onDisk).toEqual(encodeGguf({ alignment: 64, metadata: ALL_VALUES, tensors: data }));
    expect(layout.fileSize).toBe(onDisk.byteLength);
    const src = new FileSource(path);
    try {
      await checkRoundTrip(onDisk, 3, 64);
      expect((await parseGguf(src)).tensors.map((t) => t.offset)).toEqual(layout.tensors.map((t) => t.offset));
    } finally {
      await src.close();
    }
  });

  it('accepts async generators as tensor data', async () => {
    const out: Uint8Array[] = [];
    const data = tensors();
    await writeGguf({ write: (c) => out.push(c.slice()) }, { metadata: {}, tensors: data }, async function* (_t, i) {
      yield data[i].data;
    });
    const joined = new Uint8Array(out.reduce((n, c) => n + c.byteLength, 0));
    out.reduce((at, c) => (joined.set(c, at), at + c.byteLength), 0);
    expect(joined).toEqual(encodeGguf({ metadata: {}, tensors: data }));
  });

  it('writes a file with no tensors and no metadata', async () => {
    const g = await parseGguf(new BytesSource(encodeGguf({ metadata: {}, tensors: [] })));
    expect(g.tensors).toEqual([]);
    expect(g.metadata.entries.size).toBe(0);
  });
});

describe('GGUF writer refuses what llama.cpp would reject, naming it', () => {
  const one = (t: object) => ({ metadata: {}, tensors: [{ name: 'w', dims: [32], type: GgmlType.F32, ...t }] });
  it.each([
    ['a bare number', { metadata: { 'x.n': 5 as never }, tensors: [] }, /"x.n".*cannot infer a GGUF type.*number 5.*gv.u32/],
    ['an out-of-range u8', { metadata: { 'x.n': gv.u8(256) }, tensors: [] }, /"x.n": 256 is not a u8/],
    ['a fractional u32', { metadata: { 'x.n': gv.u32(1.5) }, tensors: [] }, /"x.n": 1.5 is not a u32/],
    ['a mixed plain array', { metadata: { 'x.a': ['a', 1] as never }, tensors: [] }, /"x.a": a plain array must hold strings \(item 1 is number 1\)/],
    ['an f32 alignment', { metadata: { 'general.alignment': gv.f32(32) }, tensors: [] }, /"general.alignment" must be gv.u32/],
    ['a non-power-of-two alignment', { alignment: 48, metadata: {}, tensors: [] }, /alignment 48 is not a power of two/],
    ['disagreeing alignments', { alignment: 64, metadata: { 'general.alignment': gv.u32(32) }, tensors: [] }, /alignment 64 disagrees with metadata "general.alignment" 32/],
    ['a duplicate key', { metadata: [['k', 'a'], ['k', 'b']] as [string, string][], tensors: [] }, /metadata key "k" is given twice/],
    ['version 1', { version: 1 as never, metadata: {}, tensors: [] }, /GGUF version 1 cannot be written/],
    ['a partial Q8_0 block', one({ type: GgmlType.Q8_0, dims: [48] }), /tensor "w": row of 48 is not a multiple of the Q8_0 block \(32\)/],
    ['5 dimensions', one({ dims: [1, 1, 1, 1, 1] }), /tensor "w": 5 dimensions/],
    ['a 64-byte name', one({ name: 'n'.repeat(64) }), /longer than 63 bytes/],
    ['an unknown type without byteSize', one({ type: 99 }), /tensor "w": type unknown type 99 has no known block size; give byteSize/],
  ])('%s', (_label, spec, message) => {
    expect(() => planGguf(spec as GgufWriteSpec)).toThrow(GgufWriteError);
    expect(() => planGguf(spec as GgufWriteSpec)).toThrow(message);
  });

  it('a duplicate tensor name', () => {
    const t = { name: 'w', dims: [1], type: GgmlType.F32 };
    expect(() => planGguf({ metadata: {}, tensors: [t, t] })).toThrow(/tensor "w" is given twice/);
  });

  it('tensor data of the wrong size, short or long', async () => {
    const spec = { metadata: {}, tensors: [{ name: 'w', dims: [4], type: GgmlType.F32 }] };
    const sink = { write: () => {} };
    await expect(writeGguf(sink, spec, () => new Uint8Array(12))).rejects.toThrow(/tensor "w" \(F32 \[4\]\): expected 16 bytes of data, got 12/);
    await expect(writeGguf(sink, spec, () => [new Uint8Array(12), new Uint8Array(8)])).rejects.toThrow(/tensor "w" \(F32 \[4\]\): data runs past its 16 bytes \(at least 20\)/);
    expect(() => encodeGguf({ metadata: {}, tensors: [{ ...spec.tensors[0], data: new Uint8Array(3) }] })).toThrow(/expected 16 bytes of data, got 3/);
  });

  it('leaves no file behind when writing fails', async () => {
    const path = join(dir, 'failed.gguf');
    const spec = { metadata: {}, tensors: [{ name: 'w', dims: [4], type: GgmlType.F32 }] };
    await expect(writeFileAtomically(path, (sink) => writeGguf(sink, spec, () => new Uint8Array(1)))).rejects.toThrow(/expected 16 bytes/);
    await expect(readFile(path)).rejects.toThrow(/ENOENT/);
    await expect(readFile(`${path}.tmp`)).rejects.toThrow(/ENOENT/);
  });
});
