/**
 * The GPU's int8 products for Q8_0, Q4_0, Q4_K and Q6_K (nibbles spread to bytes, a weight's offset through
 * the x block's sum of quants): decode (matvec-dp4a.wgsl), where the workgroup quantizes x (plain,
 * through the folded RMSNorm, or through the folded SwiGLU) to int8 blocks as llama.cpp quantizes
 * activations, and prefill (matmul-tiles-dp4a.wgsl), where each tile quantizes the x blocks it stages;
 * both sum a block with dot4I8Packed. Their results must be W times that quantized x (the float64 product
 * with x quantized by the CPU reference quantizer), within 1% RMS of the product with x itself. The
 * decode kernel runs the float kernel for a k whose staged x would not fit workgroup memory, and needs
 * subgroups (SwiftShader's run of these tests; llvmpipe has none).
 */
import { describe, expect, it } from 'vitest';
import { dequantize, quantize } from '../../engine/gguf/quant/index.ts';
import { GgmlType, typeName } from '../../ggml/types.ts';
import type { ProductOptions } from '../../kernels/matmul-params.ts';
import { dp4aTileBytes, MatMulKernel, matmulVariant } from '../../kernels/matmul.ts';
import { dp4aGroup, MatVecKernel, matvecVariant } from '../../kernels/matvec.ts';
import { planRowShards } from '../../kernels/quant/index.ts';
import { COMPAT_CAPS } from '../../kernels/runtime/caps.ts';
import { SwiGluKernel } from '../../kernels/swiglu.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { KernelContext } from '../../kernels/runtime/context.ts';
import { WeightMatmul } from '../../kernels/matmul-select.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { accumulated, randomWeights, referenceProduct, uploadRows } from '../quant/weights.ts';

const ctx = await testContext();
const EPS = 1e-5;
const f = Math.fround;

/** x as llama.cpp quantizes activations for Q8_0 products, read back as floats. */
const quantized = (x: Float32Array) => dequantize(GgmlType.Q8_0, quantize(GgmlType.Q8_0, x), x.length);

/**
 * The product's input rows (t of k) from the x buffer as each kind of product reads it, in f32. The
 * gated activation is the device's own (the SwiGLU pass, whose act() the gated products share): an exp a
 * few ulps from JavaScript's would move a value across a rounding boundary of its int8 step now and then.
 */
async function inputRows(kind: 'plain' | 'norm' | 'glu', x: Float32Array, g: Float32Array, t: number, k: number, offset: number, stride: number, up: number): Promise<Float32Array> {
  if (kind === 'glu') {
    const glu = new SwiGluKernel(ctx, 'silu');
    const out = ctx.storage('glu', t * k * 4);
    const group = glu.bind(ctx.storage('x', x.byteLength, x), ctx.storage('x', x.byteLength, x), out);
    await runPass(ctx, (pass, arena) => glu.encode(pass, arena, group, { tokens: t, n: k, gateOffset: offset, upOffset: offset + up, inStride: stride }));
    return readF32(ctx, out, t * k);
  }
  const out = new Float32Array(t * k);
  for (let i = 0; i < t; i++) {
    const row = x.subarray(offset + i * stride);
    let ss = 0;
    for (let j = 0; j < k; j++) ss += row[j] ** 2;
    const s = f(1 / Math.sqrt(ss / k + EPS));
    for (let j = 0; j < k; j++) {
      if (kind === 'plain') out[i * k + j] = row[j];
      else out[i * k + j] = f(f(row[j] * s) * g[j]);
    }
  }
  return out;
}

/** |got - y0 - exact| over |exact|, RMS: what quantizing x costs against the product with x itself. */
function quantizationError(got: Float32Array, y0: ArrayLike<number>, exact: Float64Array): number {
  let err = 0;
  let norm = 0;
  exact.forEach((v, i) => {
    err += (got[i] - y0[i] - v) ** 2;
    norm += v * v;
  });
  return Math.sqrt(err / norm);
}

const INT8_TYPES = [GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K].map((type) => ({ type, name: typeName(type) }));
// K-quant rows are whole 256-element blocks; 288 (9 blocks of 32) leaves lanes and the tiles' 64-wide
// steps a partial share.
const colsFor = (type: GgmlType) => (type === GgmlType.Q4_K || type === GgmlType.Q6_K ? 512 : 288);

describe.skipIf(!ctx.caps.subgroups || !ctx.caps.packedDot)('decode products on int8 x (dp4a variant)', () => {
  const cases = INT8_TYPES.flatMap(({ type, name }) => (['plain', 'norm', 'glu'] as const).flatMap((kind) => [1, 3, 8].map((t) => ({ type, name, kind, t }))));
  it.each(cases)('$name, $kind x, $t row(s): W times x quantized as llama.cpp does, added to y', async ({ type, kind, t }) => {
    // 70 rows: the last workgroup of 8 has 6; 9 blocks a row: lanes of a 4- or 32-wide subgroup take unequal shares.
    const [n, k] = [70, colsFor(type)];
    const up = kind === 'glu' ? k + 4 : 0;
    const [offset, stride] = [8, k + up + 12];
    const w = randomWeights(type, n, k, 60 + t);
    const x = randomF32(offset + t * stride, 7 + t, 2);
    const g = randomF32(k, 9, 1);
    const y0 = randomF32(t * n, 12);
    const opts: ProductOptions = kind === 'norm' ? { norm: true } : kind === 'glu' ? { glu: 'silu' } : {};
    const kern = new MatVecKernel(ctx, type, t, 'dp4a', opts);
    expect(kern.int8For(k)).toBe(true);
    const by = ctx.storage('y', y0.byteLength, y0);
    const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by, kind === 'norm' ? { norm: ctx.storage('g', g.byteLength, g) } : {});
    await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k, xOffset: offset, xStride: stride, accumulate: true, normEps: EPS, gluUp: up }));
    const got = await readF32(ctx, by, t * n);
    const input = await inputRows(kind, x, g, t, k, offset, stride, up);
    const want = referenceProduct(w, quantized(input), t).map((v, i) => v + y0[i]);
    expect(maxRelError(got, want)).toBeLessThan(1e-4);
    expect(quantizationError(got, y0, referenceProduct(w, input, t))).toBeLessThan(0.01);
  });

  // A subgroup that takes several rows loops over them: its sums must start again at zero for each row.
  // Dawn's SPIR-V (webgpu 0.6.2) zeroes a `var` declared without a value inside a loop once, not at every
  // iteration, so such a loop added each row's sum to the one before (H200, subgroups of 32 over 8 rows:
  // half a product wrong). Two subgroups over 8 rows here, whatever the adapter's subgroup size.
  const size = ctx.caps.subgroupMaxSize;
  const severalRows = [GgmlType.Q8_0, GgmlType.Q4_K].flatMap((type) => (['plain', 'norm', 'glu'] as const).flatMap((kind) => [1, 3].map((t) => ({ type, name: typeName(type), kind, t }))));
  it.each(severalRows)('$name, $kind x, $t row(s), subgroups taking 4 rows each: every row its own sum', async ({ type, kind, t }) => {
    const [n, k] = [37, colsFor(type)];
    const up = kind === 'glu' ? k : 0;
    const stride = k + up;
    const w = randomWeights(type, n, k, 80 + t);
    const x = randomF32(t * stride, 81 + t, 2);
    const g = randomF32(k, 82, 1);
    const y0 = randomF32(t * n, 83);
    const opts: ProductOptions = kind === 'norm' ? { norm: true } : kind === 'glu' ? { glu: 'silu' } : {};
    const kern = new MatVecKernel(ctx, type, t, 'dp4a', { ...opts, gpuGroup: { wg: 2 * size, rows: 8 } });
    const by = ctx.storage('y', y0.byteLength, y0);
    const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by, kind === 'norm' ? { norm: ctx.storage('g', g.byteLength, g) } : {});
    await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k, xStride: stride, accumulate: true, normEps: EPS, gluUp: up }));
    const input = await inputRows(kind, x, g, t, k, 0, stride, up);
    const want = referenceProduct(w, quantized(input), t).map((v, i) => v + y0[i]);
    expect(maxRelError(await readF32(ctx, by, t * n), want)).toBeLessThan(1e-4);
  });

  // The workgroups dp4aGroup picks by a product's rows (4 rows a subgroup each, up to 32 over 256).
  const groups = [{ wg: 128, rows: 4 }, { wg: 128, rows: 16 }, { wg: 256, rows: 32 }];
  it.each(groups.flatMap((gpuGroup) => (['plain', 'norm'] as const).map((kind) => ({ gpuGroup, kind }))))('Q8_0, $kind x, one row, $gpuGroup.wg invocations over $gpuGroup.rows rows', async ({ gpuGroup, kind }) => {
    const [n, k] = [70, 288];
    const w = randomWeights(GgmlType.Q8_0, n, k, 74);
    const x = randomF32(k, 75, 2);
    const g = randomF32(k, 76, 1);
    const kern = new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'dp4a', { gpuGroup, norm: kind === 'norm' });
    const by = ctx.storage('y', n * 4);
    const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by, kind === 'norm' ? { norm: ctx.storage('g', g.byteLength, g) } : {});
    await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t: 1, n, k, normEps: EPS }));
    const input = await inputRows(kind, x, g, 1, k, 0, k, 0);
    expect(maxRelError(await readF32(ctx, by, n), referenceProduct(w, quantized(input), 1))).toBeLessThan(1e-4);
  });

  it('picks the most rows a workgroup that leave 512 workgroups (384 with the norm folded in); batches and gated products keep 8', () => {
    // Llama-3.2-1B's decode products: QKV 3072, O and down 2048, gate|up 16384, head 128256 rows.
    expect([3072, 2048, 16384, 128256].map((n) => dp4aGroup(n, 1, {}))).toEqual([
      { wg: 128, rows: 4 },
      { wg: 128, rows: 4 },
      { wg: 256, rows: 32 },
      { wg: 256, rows: 32 },
    ]);
    expect([3072, 16384, 128256, 960].map((n) => dp4aGroup(n, 1, { norm: true }))).toEqual([
      { wg: 128, rows: 8 },
      { wg: 128, rows: 16 },
      { wg: 128, rows: 16 },
      { wg: 128, rows: 8 },
    ]);
    expect(dp4aGroup(8192, 1, {})).toEqual({ wg: 128, rows: 16 });
    expect(dp4aGroup(2048, 1, { glu: 'silu' })).toEqual({ wg: 128, rows: 8 });
    expect(dp4aGroup(16384, 2, {})).toEqual({ wg: 128, rows: 8 });
  });

  it('a row shard writes its rows of y from its row offset', async () => {
    const [n, k, t] = [40, 256, 2];
    const w = randomWeights(GgmlType.Q8_0, n, k, 71);
    const x = randomF32(t * k, 72);
    const kern = new MatVecKernel(ctx, GgmlType.Q8_0, t, 'dp4a');
    const by = ctx.storage('y', t * n * 4);
    const bx = ctx.storage('x', x.byteLength, x);
    const halves = [0, 24].map((begin) => ({ begin, rows: begin === 0 ? 24 : 16 }));
    const groups = halves.map((h) => kern.bind(uploadRows(ctx, w, h.begin, h.rows), bx, by));
    await runPass(ctx, (pass, arena) => halves.forEach((h, i) => kern.encode(pass, arena, groups[i], { t, n: h.rows, k, rowOffset: h.begin, yStride: n })));
    expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, quantized(x), t))).toBeLessThan(1e-4);
  });

  it('a k whose staged x would not fit workgroup memory runs the float subgroup kernel', async () => {
    const t = 8;
    // 8 rows of k values take 44 bytes a block of 32: past the device's workgroup memory by one block.
    const k = Math.ceil((ctx.caps.maxWorkgroupStorage + 1) / (t * 44)) * 32;
    const n = 12;
    const w = randomWeights(GgmlType.Q8_0, n, k, 73);
    const x = randomF32(t * k, 74);
    const kern = new MatVecKernel(ctx, GgmlType.Q8_0, t, 'dp4a');
    expect(kern.int8For(k)).toBe(false);
    expect(kern.int8For(k - 32)).toBe(true);
    const by = ctx.storage('y', t * n * 4);
    const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
    await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
    // The float kernel: W times x itself.
    expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(1e-4);
  });

  it('a product choosing kernels by rows (WeightMatmul) runs such a batch in int8 chunks that fit, gated x too', async () => {
    // The engine's choice as on a GPU (caps not software): 8 rows of x whose int8 staging passes workgroup
    // memory by a block, at a row and x offset, with y rows apart, accumulating.
    const gpu = new KernelContext(ctx.device, { ...ctx.caps, software: false });
    const t = 8;
    const k = Math.ceil((ctx.caps.maxWorkgroupStorage + 1) / (t * 44)) * 32;
    const n = 12;
    const w = randomWeights(GgmlType.Q8_0, n, k, 75);
    for (const glu of [false, true]) {
      const up = glu ? k + 4 : 0;
      const [offset, stride, yStride] = [8, k + up + 12, n + 3];
      const x = randomF32(offset + t * stride, 76, 2);
      const y0 = randomF32(t * yStride, 77);
      const product = new WeightMatmul(gpu, GgmlType.Q8_0, glu ? { glu: 'silu' } : {});
      product.prepare(k, n);
      const by = ctx.storage('y', y0.byteLength, y0);
      const group = product.bind(uploadRows(gpu, w), ctx.storage('x', x.byteLength, x), by);
      await runPass(gpu, (pass, arena) => product.encode(pass, arena, group, { t, n, k, xOffset: offset, xStride: stride, yStride, accumulate: true, gluUp: up }));
      const got = await readF32(ctx, by, t * yStride);
      const input = await inputRows(glu ? 'glu' : 'plain', x, new Float32Array(k), t, k, offset, stride, up);
      expect(maxRelError(got, accumulated(y0, referenceProduct(w, quantized(input), t), t, n, 0, yStride))).toBeLessThan(1e-4);
      // Not the float kernel's W times x itself.
      expect(maxRelError(got, accumulated(y0, referenceProduct(w, input, t), t, n, 0, yStride))).toBeGreaterThan(1e-4);
    }
  });
});

describe.skipIf(!ctx.caps.packedDot)('prefill products on int8 x (tiles-dp4a variant)', () => {
  // 288 = 4.5 steps of 64: the last step's second block lies past k. T=37 and 300 rows: partial tiles
  // both ways; 70 x 300 more than one tile each way. Each in the 128-row tile (forced) and in the 64-row
  // tile small grids run (these grids are all small).
  // Also the lab's forms, for a type with one scale a block and Q6_K: steps of 4 blocks
  // (int8TileBlocks), tiles of 64 tokens (int8TileTokens).
  const forms = (type: GgmlType) => [{ blocks: 2, tokens: 32 }, ...(type === GgmlType.Q8_0 || type === GgmlType.Q6_K ? [{ blocks: 4, tokens: 32 }, { blocks: 2, tokens: 64 }] : [])];
  const cases = INT8_TYPES.flatMap(({ type, name }) =>
    [128, 64].flatMap((tile) =>
      forms(type).flatMap(({ blocks, tokens }) => [
        { type, name, tile, blocks, tokens, kind: 'plain' as const, t: 37, n: 100 },
        { type, name, tile, blocks, tokens, kind: 'plain' as const, t: 70, n: 300 },
        { type, name, tile, blocks, tokens, kind: 'glu' as const, t: 37, n: 100 },
      ]),
    ),
  );
  it.each(cases)('$name, $tile-row tile, $blocks blocks a step, $tokens tokens a tile, $kind x, T=$t, $n rows: W times x quantized as llama.cpp does, added to y', async ({ type, tile, blocks, tokens, kind, t, n }) => {
    const k = colsFor(type);
    const up = kind === 'glu' ? k + 4 : 0;
    const [offset, stride] = [8, k + up + 12];
    const w = randomWeights(type, n, k, 80 + t);
    const x = randomF32(offset + t * stride, 81, 2);
    const y0 = randomF32(t * n, 82);
    const kern = new MatMulKernel(ctx, type, 'tiles-dp4a', { vec4MinWorkgroups: tile === 128 ? 0 : undefined, int8TileBlocks: blocks as 2 | 4, int8TileTokens: tokens as 32 | 64, ...(kind === 'glu' ? { glu: 'silu' as const } : {}) });
    const by = ctx.storage('y', y0.byteLength, y0);
    const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
    await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k, xOffset: offset, xStride: stride, accumulate: true, gluUp: up }));
    const got = await readF32(ctx, by, t * n);
    const input = await inputRows(kind, x, new Float32Array(k), t, k, offset, stride, up);
    expect(maxRelError(got, referenceProduct(w, quantized(input), t).map((v, i) => v + y0[i]))).toBeLessThan(1e-4);
    expect(quantizationError(got, y0, referenceProduct(w, input, t))).toBeLessThan(0.01);
  });

  it('row shards, x at an offset that is not a multiple of 4, y slices', async () => {
    const [t, n, k] = [37, 90, 256];
    const w = randomWeights(GgmlType.Q8_0, n, k, 83);
    const shards = planRowShards(GgmlType.Q8_0, n, k, 40 * (w.raw.length / n) + 100);
    expect(shards.length).toBeGreaterThan(1);
    const [xOffset, xStride, yOffset, yStride] = [7, k + 3, 11, n + 9];
    const x = randomF32(xOffset + t * xStride, 84);
    const y0 = randomF32(yOffset + t * yStride, 85);
    const kern = new MatMulKernel(ctx, GgmlType.Q8_0, 'tiles-dp4a', { vec4MinWorkgroups: 0 });
    const bx = ctx.storage('x', x.byteLength, x);
    const by = ctx.storage('y', y0.byteLength, y0);
    const groups = shards.map((s) => kern.bind(uploadRows(ctx, w, s.rowBegin, s.rows), bx, by));
    await runPass(ctx, (pass, arena) => shards.forEach((s, i) => kern.encode(pass, arena, groups[i], { t, n: s.rows, k, xOffset, xStride, yOffset, yStride, rowOffset: s.rowBegin, accumulate: true })));
    const rows = new Float32Array(t * k);
    for (let i = 0; i < t; i++) rows.set(x.subarray(xOffset + i * xStride, xOffset + i * xStride + k), i * k);
    const want = accumulated(y0, referenceProduct(w, quantized(rows), t), t, n, yOffset, yStride);
    expect(maxRelError(await readF32(ctx, by, y0.length), want)).toBeLessThan(1e-4);
  });

  it('a grid of fewer than VEC4_MIN_WORKGROUPS tiles stays on int8 x, in the 64-row tile', async () => {
    const [t, n, k] = [37, 100, 256];
    const w = randomWeights(GgmlType.Q8_0, n, k, 86);
    const x = randomF32(t * k, 87);
    const kern = new MatMulKernel(ctx, GgmlType.Q8_0, 'tiles-dp4a');
    const by = ctx.storage('y', t * n * 4);
    const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
    await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
    const got = await readF32(ctx, by, t * n);
    expect(maxRelError(got, referenceProduct(w, quantized(x), t))).toBeLessThan(1e-4);
    // Not the float product: quantizing x moves it measurably.
    expect(maxRelError(got, referenceProduct(w, x, t))).toBeGreaterThan(1e-3);
  });
});

describe('which products run on int8 x', () => {
  it('prefill: Q8_0, Q4_0, Q4_K and Q6_K on a GPU with dot4I8Packed, unless int8Dot is false', () => {
    const gpu = { ...COMPAT_CAPS, software: false, packedDot: true, maxWorkgroupStorage: 32768 };
    for (const type of [GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K]) expect(matmulVariant(gpu, type)).toBe('tiles-dp4a');
    // Q6_K's tile stages two steps a block: 17.25 KB, past the 16 KB every device offers.
    expect([dp4aTileBytes(false), dp4aTileBytes(true), dp4aTileBytes(false, 4), dp4aTileBytes(true, 4), dp4aTileBytes(false, 2, 64)]).toEqual([15360, 17664, 28160, 32768, 18432]);
    const small = { ...gpu, maxWorkgroupStorage: 16384 };
    expect(matmulVariant(small, GgmlType.Q4_K)).toBe('tiles-dp4a');
    expect(matmulVariant(small, GgmlType.Q6_K)).toBe('tiles-vec4');
    expect(() => new MatMulKernel(new KernelContext(ctx.device, { ...ctx.caps, maxWorkgroupStorage: 16384 }), GgmlType.Q6_K, 'tiles-dp4a')).toThrow(/17664 bytes of workgroup memory for Q6_K; this device offers 16384/);
    expect(matmulVariant(gpu, GgmlType.Q8_0, { int8Dot: false })).toBe('tiles-vec4');
    for (const type of [GgmlType.F32, GgmlType.F16]) expect(matmulVariant(gpu, type)).toBe('tiles-vec4');
    expect(matmulVariant({ ...gpu, packedDot: false }, GgmlType.Q8_0)).toBe('tiles-vec4');
    expect(matmulVariant({ ...gpu, software: true }, GgmlType.Q8_0)).toBe('regs');
  });

  const gpu = { ...COMPAT_CAPS, software: false, subgroups: true, packedDot: true };
  it('decode: Q8_0, Q4_0, Q4_K and Q6_K on a GPU with subgroups and dot4I8Packed, unless int8Dot is false; other types, and devices without either, keep float x', () => {
    expect(matvecVariant(gpu, GgmlType.Q8_0)).toBe('dp4a');
    expect(matvecVariant(gpu, GgmlType.Q4_0)).toBe('dp4a');
    expect(matvecVariant(gpu, GgmlType.Q4_K)).toBe('dp4a');
    expect(matvecVariant(gpu, GgmlType.Q6_K)).toBe('dp4a');
    expect(matvecVariant(gpu, GgmlType.Q8_0, { norm: true })).toBe('dp4a');
    expect(matvecVariant(gpu, GgmlType.Q8_0, { int8Dot: false })).toBe('subgroup');
    for (const type of [GgmlType.F32, GgmlType.F16, GgmlType.BF16]) expect(matvecVariant(gpu, type)).toBe('subgroup');
    expect(matvecVariant({ ...gpu, packedDot: false }, GgmlType.Q8_0)).toBe('subgroup');
    expect(matvecVariant({ ...gpu, subgroups: false }, GgmlType.Q8_0)).toBe('coop');
    expect(matvecVariant({ ...gpu, software: true }, GgmlType.Q8_0)).toBe('rows');
  });
});
