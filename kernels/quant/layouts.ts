/**
 * How each weight type sits in a GPU storage buffer (read as `array<vec4u>`), and the WGSL that decodes it.
 *
 * Every layout keeps the file's bytes per block (nothing is dequantized at load) and pads each row to
 * 16 bytes, so a row of `cols` elements takes `rowBytes(cols) = ceil(blocks * gpuBlockBytes / 16) * 16`
 * bytes and rows are independent: any run of whole rows can be repacked, uploaded or bound on its own
 * (on CPU rasterisers the block-walking types' rows go in groups of 8, weightRowGroup: any run of whole
 * groups).
 * Rows, blocks and quant words all start on 16-byte boundaries, so kernels fetch whole vec4s.
 *   - F32, Q4_K (144 = 9 x 16 bytes): the file's bytes, rows padded to 16 bytes (a no-op for Q4_K and
 *     for F32 rows of a multiple of 4 elements).
 *   - F16, BF16: the file's bytes, rows padded to 16 bytes (a no-op for rows of a multiple of 8).
 *   - Q8_0 (34-byte blocks), Q4_0 (18), Q6_K (210): "row-split". The f16 scale `d` of every block of a
 *     row moves to a header at the front of the row (padded to 16 bytes), and the rest of each block
 *     follows unchanged (32, 16 or 208 bytes: whole vec4s). Quants are aligned with no padding per block.
 */
import { GgmlType, typeName } from '../../ggml/types.ts';
import type { XqMode } from '../quantize-x.ts';
import type { GpuCaps } from '../runtime/caps.ts';
import common from './common.wgsl?raw';
import bf16 from './bf16.wgsl?raw';
import f16 from './f16.wgsl?raw';
import f32 from './f32.wgsl?raw';
import q4_0 from './q4_0.wgsl?raw';
import q4_k from './q4_k.wgsl?raw';
import q6_k from './q6_k.wgsl?raw';
import q8_0 from './q8_0.wgsl?raw';
import blockWalk from './block-walk.wgsl?raw';

export interface GpuWeightLayout {
  readonly type: GgmlType;
  /** Elements per block (1 for float types). */
  readonly blockElements: number;
  /** GPU bytes per block: the same as in the file. Rows are then padded to 16 bytes (see rowBytes). */
  readonly gpuBlockBytes: number;
  /** GPU bytes of one row of `cols` elements (a multiple of 16). */
  rowBytes(cols: number): number;
  /**
   * Raw GGUF bytes of `rows` whole rows (the start of `raw`) into the GPU layout. May return `raw` itself
   * when the layouts coincide; call it on a chunk of rows at a time to bound memory.
   */
  repack(raw: Uint8Array, rows: number, cols: number): Uint8Array;
  /** The same, written into `out` (e.g. a mapped GPU buffer range) at byte 0; `out` needs rows * rowBytes(cols). */
  repackInto(raw: Uint8Array, rows: number, cols: number, out: Uint8Array): void;
  /** WGSL decode functions (w_row, w_unit, w_unit_k, w_span, w_elem; see common.wgsl) for this type. */
  readonly wgsl: string;
  /**
   * Rows laid out together (1: each row on its own). A matrix's buffer then holds whole groups (bufferBytes),
   * a run of rows repacked or bound on its own starts at a multiple of it, and rows past the end are zero.
   */
  readonly rowGroup: number;
  /** GPU bytes of `rows` rows of `cols` elements: whole groups of rowGroup rows. */
  bufferBytes(rows: number, cols: number): number;
}

const align16 = (n: number) => Math.ceil(n / 16) * 16;

function checkShape(type: GgmlType, blockElements: number, blockBytes: number, raw: Uint8Array, rows: number, cols: number): number {
  if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows < 0 || cols <= 0 || cols % blockElements !== 0) {
    throw new Error(`${typeName(type)}: a ${rows}x${cols} matrix is not whole rows of ${blockElements}-element blocks`);
  }
  const fileRow = (cols / blockElements) * blockBytes;
  if (raw.byteLength < rows * fileRow) throw new Error(`${typeName(type)}: ${rows} rows of ${cols} need ${rows * fileRow} bytes, got ${raw.byteLength}`);
  return fileRow;
}

/** Layouts that are the file's bytes with each row padded to 16 bytes. */
function padded(type: GgmlType, blockElements: number, blockBytes: number, code: string): GpuWeightLayout {
  const rowBytes = (cols: number) => align16((cols / blockElements) * blockBytes);
  const layout: GpuWeightLayout = {
    type,
    blockElements,
    gpuBlockBytes: blockBytes,
    rowBytes,
    repackInto(raw, rows, cols, out) {
      const fileRow = checkShape(type, blockElements, blockBytes, raw, rows, cols);
      const gpuRow = rowBytes(cols);
      if (out.byteLength < rows * gpuRow) throw new Error(`${typeName(type)}: output holds ${out.byteLength} bytes, need ${rows * gpuRow}`);
      if (fileRow === gpuRow) {
        out.set(raw.subarray(0, rows * fileRow));
        return;
      }
      for (let r = 0; r < rows; r++) {
        out.set(raw.subarray(r * fileRow, (r + 1) * fileRow), r * gpuRow);
        out.fill(0, r * gpuRow + fileRow, (r + 1) * gpuRow);
      }
    },
    repack(raw, rows, cols) {
      const fileRow = checkShape(type, blockElements, blockBytes, raw, rows, cols);
      if (fileRow === rowBytes(cols)) return raw.subarray(0, rows * fileRow);
      const out = new Uint8Array(rows * rowBytes(cols));
      layout.repackInto(raw, rows, cols, out);
      return out;
    },
    wgsl: `${common}\n${code}\nconst W_GROUP = 1u;\n`,
    rowGroup: 1,
    bufferBytes: (rows, cols) => rows * rowBytes(cols),
  };
  return layout;
}

/**
 * Writes one row of a repack: its file bytes start at `src` in `raw`, its group at byte `g` of `out`, it
 * is row `i` of that group, and it has `nb` blocks.
 */
type PlaceRow = (raw: Uint8Array, src: number, out: Uint8Array, g: number, i: number, nb: number) => void;

/**
 * What layouts with rows in groups of `group` (1: each row alone) share: sizes, checks, repack, WGSL.
 * Rows are padded to `rowAlign` bytes (16, or a float type's 32-byte units).
 */
function grouped(type: GgmlType, blockElements: number, blockBytes: number, code: string, group: number, placeRow: PlaceRow, rowAlign = 16): GpuWeightLayout {
  const rowBytes = (cols: number) => Math.ceil(((cols / blockElements) * blockBytes) / rowAlign) * rowAlign;
  const bufferBytes = (rows: number, cols: number) => Math.ceil(rows / group) * group * rowBytes(cols);
  const layout: GpuWeightLayout = {
    type,
    blockElements,
    gpuBlockBytes: blockBytes,
    rowBytes,
    rowGroup: group,
    bufferBytes,
    repackInto(raw, rows, cols, out) {
      const fileRow = checkShape(type, blockElements, blockBytes, raw, rows, cols);
      const gpuRow = rowBytes(cols);
      const bytes = bufferBytes(rows, cols);
      if (out.byteLength < bytes) throw new Error(`${typeName(type)}: output holds ${out.byteLength} bytes, need ${bytes}`);
      // Rows past the end of the last group, and any padding.
      out.fill(0, 0, bytes);
      for (let r = 0; r < rows; r++) placeRow(raw, r * fileRow, out, Math.floor(r / group) * group * gpuRow, r % group, cols / blockElements);
    },
    repack(raw, rows, cols) {
      const out = new Uint8Array(bufferBytes(rows, cols));
      layout.repackInto(raw, rows, cols, out);
      return out;
    },
    wgsl: `${common}\n${code}\nconst W_GROUP = ${group}u;\n`,
  };
  return layout;
}

/**
 * Whole blocks of a multiple of 16 bytes (Q4_K) in groups of `group` rows: block 0 of each of the group's
 * rows, then block 1 of each, and so on (w_row in q4_k.wgsl).
 */
function blocksInGroups(type: GgmlType, blockElements: number, blockBytes: number, code: string, group: number): GpuWeightLayout {
  return grouped(type, blockElements, blockBytes, code, group, (raw, src, out, g, i, nb) => {
    for (let b = 0; b < nb; b++) out.set(raw.subarray(src + b * blockBytes, src + (b + 1) * blockBytes), g + (b * group + i) * blockBytes);
  });
}

/**
 * F16 in groups of `group` rows: rows padded to whole units of 16 halves (32 bytes), then unit 0 of each of
 * the group's rows, unit 1 of each, and so on (w_row and w_vec in f16.wgsl).
 */
function halvesInGroups(code: string, group: number): GpuWeightLayout {
  return grouped(
    GgmlType.F16,
    1,
    2,
    code,
    group,
    (raw, src, out, g, i, nb) => {
      for (let s = 0; s * 16 < nb; s++) out.set(raw.subarray(src + 32 * s, src + 2 * Math.min(nb, 16 * (s + 1))), g + (s * group + i) * 32);
    },
    32,
  );
}

/**
 * Row-split layouts: the blocks' f16 scales (found at byte `dAt` of each block) first, then the rest. With
 * `group` > 1 (rowGroup), rows go in groups: the group's scales block by block (block 0's of each of its
 * rows, then block 1's, ...: one vec4 holds a block's scales for 8 rows, which a CPU decode invocation
 * loads once for its 8), then block 0 of each of its rows, block 1 of each, and so on; the group takes the
 * bytes of its rows, and its row i's parts sit where w_row, w_scale (common.wgsl) and w_quants (q8_0.wgsl)
 * find them.
 */
function rowSplit(type: GgmlType, blockElements: number, blockBytes: number, dAt: number, code: string, group = 1): GpuWeightLayout {
  const rest = blockBytes - 2;
  return grouped(type, blockElements, blockBytes, code, group, (raw, src, out, g, i, nb) => {
    const head = align16(nb * 2);
    for (let b = 0; b < nb; b++) {
      const blk = src + b * blockBytes;
      // The group's scales block by block (w_scale in common.wgsl): block b of its rows side by side.
      const d = g + 2 * (b * group + i);
      out[d] = raw[blk + dAt];
      out[d + 1] = raw[blk + dAt + 1];
      // The bytes before and after d, in file order (d is first in Q8_0/Q4_0, last in Q6_K).
      const to = g + group * head + (b * group + i) * rest;
      out.set(raw.subarray(blk, blk + dAt), to);
      out.set(raw.subarray(blk + dAt + 2, blk + blockBytes), to + dAt);
    }
  });
}

const LAYOUTS: Partial<Record<GgmlType, GpuWeightLayout>> = {
  [GgmlType.F32]: padded(GgmlType.F32, 1, 4, f32),
  [GgmlType.F16]: padded(GgmlType.F16, 1, 2, f16),
  [GgmlType.BF16]: padded(GgmlType.BF16, 1, 2, bf16),
  [GgmlType.Q4_K]: padded(GgmlType.Q4_K, 256, 144, blockWalk + '\n' + q4_k),
  [GgmlType.Q8_0]: rowSplit(GgmlType.Q8_0, 32, 34, 0, blockWalk + '\n' + q8_0),
  [GgmlType.Q4_0]: rowSplit(GgmlType.Q4_0, 32, 18, 0, blockWalk + '\n' + q4_0),
  [GgmlType.Q6_K]: rowSplit(GgmlType.Q6_K, 256, 210, 208, blockWalk + '\n' + q6_k),
};

/**
 * Types whose decoder also provides a whole-block walk (WALK_STEP, WBlock, w_step, w_step_block, block_dot; quant/block-walk.wgsl)
 * for the CPU rasterisers' products, which then read x quantized to int8 blocks, in the mode llama.cpp's
 * CPU backend quantizes activations for that type.
 */
export const BLOCK_WALK_TYPES: ReadonlyMap<GgmlType, XqMode> = new Map([
  [GgmlType.Q8_0, 'q8_0'],
  [GgmlType.Q4_0, 'q8_0'],
  [GgmlType.Q4_K, 'q8_K'],
  [GgmlType.Q6_K, 'q8_K'],
]);

/**
 * Blocks of 32 a block walk takes a step for `type` (its decoder's WALK_STEP, quant/block-walk.wgsl): the
 * blocks that share weight words, which a kernel unrolling the step loads once.
 */
export function walkStep(type: GgmlType): number {
  const m = /^const WALK_STEP = (\d+)u;$/m.exec(gpuLayout(type).wgsl);
  if (!BLOCK_WALK_TYPES.has(type) || !m) throw new Error(`${typeName(type)} has no block walk`);
  return Number(m[1]);
}

/** Weight types the GPU kernels can read. */
export const GPU_WEIGHT_TYPES: readonly GgmlType[] = Object.keys(LAYOUTS).map(Number) as GgmlType[];

/** Rows a CPU rasteriser's decode invocation computes side by side for the block-walking types (matvec.ts). */
const ROW_GROUP = 8;

/**
 * The types whose rows go in groups on CPU rasterisers (weightRowGroup), each in groups of the rows its
 * decode invocation computes: ROW_GROUP for the block-walking types, 4 for F16 (matvec.ts).
 */
const GROUPED: Partial<Record<GgmlType, GpuWeightLayout>> = {
  [GgmlType.F16]: halvesInGroups(f16, 4),
  [GgmlType.Q8_0]: rowSplit(GgmlType.Q8_0, 32, 34, 0, blockWalk + '\n' + q8_0, ROW_GROUP),
  [GgmlType.Q4_0]: rowSplit(GgmlType.Q4_0, 32, 18, 0, blockWalk + '\n' + q4_0, ROW_GROUP),
  [GgmlType.Q4_K]: blocksInGroups(GgmlType.Q4_K, 256, 144, blockWalk + '\n' + q4_k, ROW_GROUP),
  [GgmlType.Q6_K]: rowSplit(GgmlType.Q6_K, 256, 210, 208, blockWalk + '\n' + q6_k, ROW_GROUP),
};

/** The layout of `type`, with rows in groups of `group` (weightRowGroup; 1: each row on its own). */
export function gpuLayout(type: GgmlType, group = 1): GpuWeightLayout {
  const l = group === 1 ? LAYOUTS[type] : GROUPED[type]?.rowGroup === group ? GROUPED[type] : undefined;
  if (!l) throw new Error(group === 1 ? `no GPU layout for tensor type ${typeName(type)} (have: ${GPU_WEIGHT_TYPES.map(typeName).join(', ')})` : `no GPU layout for ${typeName(type)} in groups of ${group} rows`);
  return l;
}

/**
 * Rows a `type` matrix lays out together on this device. CPU rasterisers' decode products of the
 * block-walking types (Q8_0, Q4_0, Q4_K, Q6_K) compute 8 rows an invocation side by side
 * (matvec-rows-blocks.wgsl), F16's 4 (matvec-rows.wgsl); with each row on its own that is 8 (or 4) short
 * streams per SIMD lane, which the CPU's prefetchers follow poorly. In groups (each block or 16-half unit
 * of the group's rows together) a lane reads one stream. GPUs keep rows apart, which coalesces their
 * neighbouring lanes' reads. Measured on llvmpipe, variants alternated in one process (medians):
 *   - Q8_0, a SmolLM2-135M decode step's 120 products: 46 -> 32 ms (loads only, no arithmetic: 38 -> 26;
 *     the arithmetic costs nothing beside the loads); 4-row groups 9% slower than 8, 2-row groups slower
 *     than none; engine decode 20.9 -> 22.5 tok/s, 64-token prefill unchanged (266 -> 271 tok/s).
 *   - At 768 x 2048 shapes: Q4_0 48 -> 36 ms, Q4_K 40 -> 33 ms, Q6_K 76.9 -> 76.7 ms (best 64 -> 60; its
 *     6-bit unpacking weighs more than its loads).
 *   - F16 in groups of 4, SmolLM2 shapes: 43.8 -> 33.9 ms (30 rounds; per-round ratio 0.89, 0.95 in a
 *     shorter run); 64-token tiled products unchanged.
 */
export function weightRowGroup(caps: Pick<GpuCaps, 'software'>, type: GgmlType): number {
  return caps.software ? (GROUPED[type]?.rowGroup ?? 1) : 1;
}

/** gpuLayout(type) as this device lays it out (weightRowGroup). */
export function deviceLayout(caps: Pick<GpuCaps, 'software'>, type: GgmlType): GpuWeightLayout {
  return gpuLayout(type, weightRowGroup(caps, type));
}
