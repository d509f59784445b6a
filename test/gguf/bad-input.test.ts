import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GgufError, parseGguf } from '../../engine/gguf/parse.ts';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { encodeGguf, gv } from '../../engine/gguf/write.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { BytesSource } from '../../engine/loader/source.ts';
import { sharedModel } from '../helpers/models.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-gguf-bad-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

const stories = new Uint8Array(await readFile(sharedModel('stories260K.gguf')));

/** Parses `bytes` from a real file on disk, as the engine would. */
async function parseFile(name: string, bytes: Uint8Array | string) {
  const path = join(dir, name);
  await writeFile(path, bytes);
  const src = new FileSource(path);
  try {
    return await parseGguf(src);
  } finally {
    await src.close();
  }
}

async function expectGgufError(p: Promise<unknown>, message: RegExp) {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, 'expected a GgufError').toBeInstanceOf(GgufError);
  expect((e as Error).message).toMatch(message);
}

function patched(bytes: Uint8Array, at: number, write: (v: DataView) => void): Uint8Array {
  const copy = bytes.slice();
  write(new DataView(copy.buffer, at));
  return copy;
}

/** Byte offset of the tensor-table field right after tensor `name` (its dimension count). */
function afterTensorName(bytes: Uint8Array, name: string): number {
  const needle = new TextEncoder().encode(name);
  // The table entry is u64 length + name; the same text may also appear in metadata, so take the last hit.
  let hit = -1;
  for (let i = 0; i + needle.length <= bytes.length; i++) {
    let j = 0;
    while (j < needle.length && bytes[i + j] === needle[j]) j++;
    if (j === needle.length && new DataView(bytes.buffer, bytes.byteOffset + i - 8).getBigUint64(0, true) === BigInt(needle.length)) hit = i;
  }
  if (hit < 0) throw new Error(`tensor name ${name} not in header`);
  return hit + needle.length;
}

const twoTensors = () =>
  encodeGguf({
    metadata: { 'general.architecture': 'llama' },
    tensors: [
      { name: 'wa', dims: [8], type: GgmlType.F32, data: new Uint8Array(32) },
      { name: 'wb', dims: [8], type: GgmlType.F32, data: new Uint8Array(32) },
    ],
  });

describe('bad GGUF input gives a GgufError that says what is wrong', () => {
  it('an empty file', async () => {
    await expectGgufError(parseFile('empty.gguf', new Uint8Array(0)), /empty\.gguf: not a GGUF file \(only 0 bytes\)/);
  });

  it('a text file', async () => {
    await expectGgufError(parseFile('notes.txt', '# My model\nThis is not a model at all.\n'), /notes\.txt: not a GGUF file \(starts with "# My", expected "GGUF"\)/);
  });

  it('a truncated header (first 1000 bytes of a real model)', async () => {
    await expectGgufError(parseFile('head.gguf', stories.subarray(0, 1000)), /head\.gguf: file is truncated: reading .+ needs \d+ bytes at offset \d+, but the file has 1000 bytes/);
  });

  it('a file cut inside the magic-and-version words', async () => {
    await expectGgufError(parseFile('tiny.gguf', stories.subarray(0, 6)), /not a GGUF file \(only 6 bytes\)/);
  });

  it('truncated tensor data (a real model missing its last 100 bytes)', async () => {
    await expectGgufError(
      parseFile('cut.gguf', stories.subarray(0, stories.length - 100)),
      /cut\.gguf: file is truncated: tensor "[\w.]+" needs bytes \d+\.\.\d+ but the file has 1185276/,
    );
  });

  it('GGUF version 1', async () => {
    await expectGgufError(parseFile('v1.gguf', patched(stories, 4, (v) => v.setUint32(0, 1, true))), /v1\.gguf: GGUF version 1 is not supported \(only versions 2 and 3\)/);
  });

  it('a future GGUF version', async () => {
    await expectGgufError(parseFile('v4.gguf', patched(stories, 4, (v) => v.setUint32(0, 4, true))), /GGUF version 4 is not supported/);
  });

  it('a big-endian file', async () => {
    await expectGgufError(parseFile('be.gguf', patched(stories, 4, (v) => v.setUint32(0, 3, false))), /be\.gguf: GGUF file is big-endian/);
  });

  it('an absurd tensor count', async () => {
    await expectGgufError(
      parseFile('count.gguf', patched(stories, 8, (v) => v.setBigUint64(0, 1n << 40n, true))),
      /count\.gguf: implausible header \(1099511627776 tensors, \d+ metadata entries\): file is corrupt/,
    );
  });

  it('a count beyond 2^53', async () => {
    await expectGgufError(parseFile('huge.gguf', patched(stories, 16, (v) => v.setBigUint64(0, 1n << 60n, true))), /huge\.gguf: metadata count is too large \(1152921504606846976\)/);
  });

  it('a string longer than the file', async () => {
    // The first key's length field follows the 24-byte fixed header.
    await expectGgufError(parseFile('str.gguf', patched(stories, 24, (v) => v.setBigUint64(0, 1n << 40n, true))), /str\.gguf: metadata key 0 claims 1099511627776 bytes, more than the file holds/);
  });

  it('an array with more items than the file holds', async () => {
    const bytes = encodeGguf({ metadata: { 'x.a': gv.array('u32', [1, 2, 3]) }, tensors: [] });
    // key length (8) + "x.a" (3) + type (4) + item type (4) → the item count.
    const at = 24 + 8 + 3 + 4 + 4;
    await expectGgufError(parseFile('arr.gguf', patched(bytes, at, (v) => v.setBigUint64(0, 1n << 40n, true))), /arr\.gguf: metadata "x\.a" claims 1099511627776 items, more than the file holds/);
  });

  it('an unknown metadata value type', async () => {
    const bytes = encodeGguf({ metadata: { 'x.v': gv.u32(1) }, tensors: [] });
    await expectGgufError(parseFile('vt.gguf', patched(bytes, 24 + 8 + 3, (v) => v.setUint32(0, 77, true))), /vt\.gguf: metadata "x\.v" has unknown value type 77/);
  });

  it('an absurd tensor shape', async () => {
    const bytes = twoTensors();
    const at = afterTensorName(bytes, 'wa') + 4;
    await expectGgufError(parseFile('shape.gguf', patched(bytes, at, (v) => v.setBigUint64(0, 1n << 52n, true))), /shape\.gguf: file is truncated: tensor "wa" needs bytes \d+\.\.\d+ but the file has \d+/);
    const fourDims = encodeGguf({ metadata: {}, tensors: [{ name: 'w4', dims: [1, 1, 1, 1], type: GgmlType.F32, data: new Uint8Array(4) }] });
    const d = afterTensorName(fourDims, 'w4') + 4;
    const absurd = patched(fourDims, d, (v) => {
      for (let i = 0; i < 4; i++) v.setBigUint64(i * 8, 1n << 40n, true);
    });
    await expectGgufError(parseFile('shape4.gguf', absurd), /shape4\.gguf: tensor "w4" has an implausible shape \[1099511627776, 1099511627776, 1099511627776, 1099511627776\]: file is corrupt/);
  });

  it('too many dimensions', async () => {
    const bytes = twoTensors();
    await expectGgufError(parseFile('dims.gguf', patched(bytes, afterTensorName(bytes, 'wa'), (v) => v.setUint32(0, 7, true))), /dims\.gguf: tensor "wa" has 7 dimensions \(1 to 4 allowed\)/);
  });

  it('a duplicate tensor name', async () => {
    const bytes = twoTensors();
    const at = afterTensorName(bytes, 'wb') - 1;
    await expectGgufError(parseFile('dup.gguf', patched(bytes, at, (v) => v.setUint8(0, 'a'.charCodeAt(0)))), /dup\.gguf: tensor name "wa" appears twice in the tensor table/);
  });

  it('a duplicate metadata key', async () => {
    const bytes = encodeGguf({ metadata: { 'k.a': 'x', 'k.b': 'y' }, tensors: [] });
    const at = lastCharOfKey(bytes, 'k.b');
    await expectGgufError(parseFile('dupkey.gguf', patched(bytes, at, (v) => v.setUint8(0, 'a'.charCodeAt(0)))), /dupkey\.gguf: metadata key "k\.a" appears twice/);
  });

  it('a tensor offset off the alignment', async () => {
    const bytes = twoTensors();
    const at = afterTensorName(bytes, 'wb') + 4 + 8 + 4;
    await expectGgufError(parseFile('align.gguf', patched(bytes, at, (v) => v.setBigUint64(0, 36n, true))), /align\.gguf: tensor "wb" data offset 36 is not a multiple of the alignment 32/);
  });

  it('a general.alignment that is not a power of two', async () => {
    const bytes = encodeGguf({ alignment: 64, metadata: {}, tensors: [] });
    // The only entry: key length (8) + key + type (4), then the u32 value.
    const at = 24 + 8 + 'general.alignment'.length + 4;
    await expectGgufError(parseFile('al.gguf', patched(bytes, at, (v) => v.setUint32(0, 48, true))), /al\.gguf: general\.alignment 48 is not a power of two/);
  });
});

/** Offset of the last character of metadata key `key` in the header. */
function lastCharOfKey(bytes: Uint8Array, key: string): number {
  const text = new TextDecoder('latin1').decode(bytes);
  const i = text.indexOf(key);
  if (i < 0) throw new Error(`key ${key} not in header`);
  return i + key.length - 1;
}

describe('unknown tensor types stay in the table so the loader can name them', () => {
  it('keeps the tensor with its type number and byteSize 0, and later tensors stay addressable', async () => {
    const bytes = encodeGguf({
      metadata: {},
      tensors: [
        { name: 'blk.0.attn_q.weight', dims: [32, 2], type: 99 as GgmlType, byteSize: 64, data: new Uint8Array(64) },
        { name: 'blk.0.ffn_up.weight', dims: [4], type: GgmlType.F32, data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) },
      ],
    });
    const g = await parseGguf(new BytesSource(bytes, 'odd.gguf'));
    const [odd, next] = g.tensors;
    expect(odd).toMatchObject({ name: 'blk.0.attn_q.weight', type: 99, byteSize: 0, elements: 64, dims: [32, 2] });
    // The loader's message: it has the name, the type number and a readable type name.
    expect(`tensor "${odd.name}" has type ${typeName(odd.type)} [${odd.dims.join(', ')}], which the engine cannot load`).toBe(
      'tensor "blk.0.attn_q.weight" has type unknown type 99 [32, 2], which the engine cannot load',
    );
    expect(new Float32Array(bytes.slice(next.offset, next.offset + next.byteSize).buffer)).toEqual(new Float32Array([1, 2, 3, 4]));
  });

  it('names a known ggml type the engine has no block size for', async () => {
    const bytes = encodeGguf({ metadata: {}, tensors: [{ name: 'w', dims: [256], type: GgmlType.IQ2_XXS, byteSize: 66, data: new Uint8Array(66) }] });
    const g = await parseGguf(new BytesSource(bytes));
    expect(g.tensors[0].byteSize).toBe(0);
    expect(typeName(g.tensors[0].type)).toBe('IQ2_XXS');
  });
});
