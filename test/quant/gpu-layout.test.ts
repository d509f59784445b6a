import { describe, expect, it } from 'vitest';
import { dequantize, quantize } from '../../engine/gguf/quant/index.ts';
import { BLOCK_GEOMETRY, GgmlType, typeName } from '../../ggml/types.ts';
import { COMPAT_CAPS } from '../../kernels/runtime/caps.ts';
import { GPU_WEIGHT_TYPES, gpuLayout, planRowShards, weightRowGroup } from '../../kernels/quant/index.ts';
import { randomF32 } from '../helpers/random.ts';

/** Undo the row-split layout on the CPU: what the WGSL decoders read, restated independently. */
function unsplit(type: GgmlType, packed: Uint8Array, rows: number, cols: number): Uint8Array {
  const g = BLOCK_GEOMETRY[type]!;
  const nb = cols / g.elements;
  const rowBytes = gpuLayout(type).rowBytes(cols);
  const head = Math.ceil((nb * 2) / 16) * 16;
  const dAt = type === GgmlType.Q6_K ? 208 : 0;
  const out = new Uint8Array(rows * nb * g.bytes);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < nb; b++) {
      const blk = out.subarray((r * nb + b) * g.bytes, (r * nb + b + 1) * g.bytes);
      const rest = packed.subarray(r * rowBytes + head + b * (g.bytes - 2), r * rowBytes + head + (b + 1) * (g.bytes - 2));
      blk.set(rest.subarray(0, dAt), 0);
      blk.set(packed.subarray(r * rowBytes + 2 * b, r * rowBytes + 2 * b + 2), dAt);
      blk.set(rest.subarray(dAt), dAt + 2);
    }
  }
  return out;
}

describe('GPU weight layouts', () => {
  for (const type of GPU_WEIGHT_TYPES) {
    const g = BLOCK_GEOMETRY[type]!;
    const layout = gpuLayout(type);
    // Odd block counts exercise the padding of rows and scale headers.
    for (const blocks of [3, 8]) {
      const cols = g.elements === 1 ? blocks * 15 : blocks * g.elements;
      it(`${typeName(type)}: ${cols}-element rows keep the file's bytes, 16-byte aligned, repackable in chunks`, () => {
        const rows = 7;
        const raw = quantize(type, randomF32(rows * cols, cols));
        expect(layout.gpuBlockBytes).toBe(g.bytes);
        expect(layout.rowBytes(cols) % 16).toBe(0);
        expect(layout.rowBytes(cols) - raw.length / rows).toBeLessThan(16);
        const whole = layout.repack(raw, rows, cols);
        expect(whole.length).toBe(rows * layout.rowBytes(cols));
        // Chunks of rows repacked on their own land where the whole repack puts them.
        const out = new Uint8Array(whole.length).fill(0xaa);
        const fileRow = raw.length / rows;
        for (const [begin, count] of [[0, 3], [3, 1], [4, 3]]) {
          layout.repackInto(raw.subarray(begin * fileRow, (begin + count) * fileRow), count, cols, out.subarray(begin * layout.rowBytes(cols)));
        }
        expect(Buffer.from(out).equals(Buffer.from(whole))).toBe(true);
        // And the values survive: undo the layout on the CPU and decode with the reference.
        const back =
          type === GgmlType.Q8_0 || type === GgmlType.Q4_0 || type === GgmlType.Q6_K
            ? unsplit(type, whole, rows, cols)
            : Uint8Array.from({ length: raw.length }, (_, i) => whole[Math.floor(i / fileRow) * layout.rowBytes(cols) + (i % fileRow)]);
        expect(dequantize(type, back, rows * cols)).toEqual(dequantize(type, raw, rows * cols));
      });
    }
  }

  it('Q8_0 in groups of 8 rows (CPU rasterisers): each group holds its rows\' scales block by block, then block by block the 8 rows\' quants; a partial group is zero-padded', () => {
    const grouped = gpuLayout(GgmlType.Q8_0, 8);
    const plain = gpuLayout(GgmlType.Q8_0);
    expect(grouped.rowGroup).toBe(8);
    expect(weightRowGroup({ software: true }, GgmlType.Q8_0)).toBe(8);
    expect(weightRowGroup({ software: false }, GgmlType.Q8_0)).toBe(1);
    expect(weightRowGroup({ software: true }, GgmlType.Q4_0)).toBe(8);
    expect(weightRowGroup({ software: true }, GgmlType.Q4_K)).toBe(8);
    expect(weightRowGroup({ software: true }, GgmlType.Q6_K)).toBe(8);
    expect(weightRowGroup({ software: true }, GgmlType.F16)).toBe(4);
    expect(weightRowGroup({ software: true }, GgmlType.BF16)).toBe(1);
    const [rows, cols] = [13, 96];
    const nb = cols / 32;
    const raw = quantize(GgmlType.Q8_0, randomF32(rows * cols, 5));
    const rowBytes = plain.rowBytes(cols);
    const head = 16;
    const rows1 = plain.repack(raw, rows, cols);
    const out = grouped.repack(raw, rows, cols);
    expect(out.length).toBe(16 * rowBytes);
    expect(grouped.bufferBytes(rows, cols)).toBe(16 * rowBytes);
    for (let r = 0; r < 16; r++) {
      const g = Math.floor(r / 8) * 8 * rowBytes;
      const i = r % 8;
      // Block b's scales of the group's 8 rows side by side (one vec4 a block: w_scale in common.wgsl),
      // in the 8 headers' room.
      const header = Array.from({ length: nb }, (_, b) => Array.from(out.subarray(g + 2 * (b * 8 + i), g + 2 * (b * 8 + i) + 2))).flat();
      const quants = Array.from({ length: nb }, (_, b) => out.subarray(g + 8 * head + (b * 8 + i) * 32, g + 8 * head + (b * 8 + i + 1) * 32));
      if (r < rows) {
        expect(header).toEqual(Array.from(rows1.subarray(r * rowBytes, r * rowBytes + 2 * nb)));
        quants.forEach((q, b) => expect(Array.from(q)).toEqual(Array.from(rows1.subarray(r * rowBytes + head + 32 * b, r * rowBytes + head + 32 * (b + 1)))));
      } else {
        expect(header.every((v) => v === 0) && quants.every((q) => q.every((v) => v === 0))).toBe(true);
      }
    }
    // Runs of whole groups repack on their own to where the whole repack puts them.
    const fileRow = raw.length / rows;
    const parts = new Uint8Array(out.length).fill(0xaa);
    grouped.repackInto(raw.subarray(0, 8 * fileRow), 8, cols, parts);
    grouped.repackInto(raw.subarray(8 * fileRow), rows - 8, cols, parts.subarray(8 * rowBytes));
    expect(Buffer.from(parts).equals(Buffer.from(out))).toBe(true);
    expect(() => gpuLayout(GgmlType.F16, 8)).toThrow(/groups of 8/);
    expect(() => gpuLayout(GgmlType.BF16, 4)).toThrow(/groups of 4/);
  });

  it('Q4_K in groups of 8 rows: block b of the group\'s row i at block index 8b + i; a partial group is zero-padded', () => {
    const grouped = gpuLayout(GgmlType.Q4_K, 8);
    const [rows, cols] = [11, 512];
    const raw = quantize(GgmlType.Q4_K, randomF32(rows * cols, 6));
    const out = grouped.repack(raw, rows, cols);
    const rowBytes = 2 * 144;
    expect(out.length).toBe(16 * rowBytes);
    for (let r = 0; r < 16; r++) {
      for (let b = 0; b < 2; b++) {
        const at = Math.floor(r / 8) * 8 * rowBytes + (b * 8 + (r % 8)) * 144;
        const got = Array.from(out.subarray(at, at + 144));
        expect(got).toEqual(r < rows ? Array.from(raw.subarray(r * rowBytes + b * 144, r * rowBytes + (b + 1) * 144)) : new Array(144).fill(0));
      }
    }
  });

  it('F16 in groups of 4 rows: rows padded to whole units of 16 halves, unit s of the group\'s row i at unit index 4s + i', () => {
    const grouped = gpuLayout(GgmlType.F16, 4);
    const [rows, cols] = [6, 40];
    const raw = quantize(GgmlType.F16, randomF32(rows * cols, 7));
    const out = grouped.repack(raw, rows, cols);
    // 40 halves: two whole units, then one of 8 halves and 8 of padding: 3 units of 32 bytes a row.
    expect(grouped.rowBytes(cols)).toBe(96);
    expect(out.length).toBe(8 * 96);
    for (let r = 0; r < 8; r++) {
      for (let s = 0; s < 3; s++) {
        const at = Math.floor(r / 4) * 4 * 96 + (s * 4 + (r % 4)) * 32;
        const want = new Array(32).fill(0);
        if (r < rows) Array.from(raw.subarray(r * 80 + 32 * s, r * 80 + Math.min(80, 32 * (s + 1)))).forEach((v, j) => (want[j] = v));
        expect(Array.from(out.subarray(at, at + 32))).toEqual(want);
      }
    }
  });

  it('rejects partial rows and short input', () => {
    expect(() => gpuLayout(GgmlType.Q4_K).repack(new Uint8Array(144), 1, 128)).toThrow(/whole rows/);
    expect(() => gpuLayout(GgmlType.Q8_0).repack(new Uint8Array(34), 2, 32)).toThrow(/need 68 bytes/);
    expect(() => gpuLayout(GgmlType.Q5_K)).toThrow(/no GPU layout/);
  });
});

describe('row shards', () => {
  it("splits a Llama 3 sized Q8_0 embedding to fit compatibility mode's 128 MiB bindings", () => {
    const [rows, cols] = [128256, 2048];
    const rowBytes = gpuLayout(GgmlType.Q8_0).rowBytes(cols);
    const shards = planRowShards(GgmlType.Q8_0, rows, cols, COMPAT_CAPS.maxStorageBinding, COMPAT_CAPS.minStorageOffsetAlignment);
    expect(shards.length).toBe(3);
    let next = 0;
    for (const s of shards) {
      expect(s.rowBegin).toBe(next);
      expect(s.byteSize).toBe(s.rows * rowBytes);
      expect(s.byteSize).toBeLessThanOrEqual(COMPAT_CAPS.maxStorageBinding);
      expect(s.byteOffset).toBe(s.rowBegin * rowBytes);
      expect(s.byteOffset % 256).toBe(0);
      next += s.rows;
    }
    expect(next).toBe(rows);
  });

  it('with rows in groups, every shard but the last holds whole groups, and its buffer whole groups', () => {
    const [rows, cols] = [1000, 576];
    const rowBytes = gpuLayout(GgmlType.Q8_0).rowBytes(cols);
    const shards = planRowShards(GgmlType.Q8_0, rows, cols, 301 * rowBytes, 16, 8);
    expect(shards.length).toBe(4);
    for (const s of shards.slice(0, -1)) expect(s.rows % 8).toBe(0);
    const last = shards[shards.length - 1];
    expect(last.rows).toBe(rows - 3 * shards[0].rows);
    expect(last.byteSize).toBe(Math.ceil(last.rows / 8) * 8 * rowBytes);
    expect(() => planRowShards(GgmlType.Q8_0, 16, cols, 7 * rowBytes, 16, 8)).toThrow(/a group of 8 rows/);
  });

  it('keeps a small tensor whole and refuses a row larger than a binding', () => {
    expect(planRowShards(GgmlType.F16, 64, 100, 1 << 20)).toEqual([{ rowBegin: 0, rows: 64, byteOffset: 0, byteSize: 64 * 208 }]);
    expect(() => planRowShards(GgmlType.F32, 2, 1024, 4000)).toThrow(/more than a storage binding/);
  });
});
