/**
 * Tails (kernels/matvec-tail.ts): the pass after a CPU rasteriser's decode product, run by the product's
 * last invocation. The product's output and the tail's int8 rows must be the same bits as the product
 * followed by the pass it replaces (the serial q8 RMSNorm, the q8 gated activation), for every row count
 * the matrix-vector kernel takes, dispatch after dispatch (the counter resets itself), and a dispatch
 * that does not ask for its tail must leave the tail's output alone.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { matvecUpTo } from '../../kernels/matmul-select.ts';
import { MatVecKernel } from '../../kernels/matvec.ts';
import { tailCounterWords, type ProductTail } from '../../kernels/matvec-tail.ts';
import { QuantizeXKernel, q8RowVec4s, type XqMode } from '../../kernels/quantize-x.ts';
import { RmsNormKernel } from '../../kernels/rmsnorm.ts';
import { SwiGluKernel } from '../../kernels/swiglu.ts';
import { RopeKvStoreKernel } from '../../kernels/rope-kv-store.ts';
import { readBuffer } from '../helpers/gpu.ts';
import { ParamArena } from '../../kernels/runtime/arena.ts';
import { readF32, readU32, runPass, testContext } from '../helpers/gpu.ts';
import { randomF32 } from '../helpers/random.ts';
import { randomWeights, uploadRows } from '../quant/weights.ts';

const ctx = await testContext();
const EPS = 1e-5;

interface Case {
  type: GgmlType;
  mode: XqMode;
  k: number;
}

/** Runs `record` in one pass, then reads y (t rows of n) and the int8 output (t rows of `width`). */
async function outputs(record: Parameters<typeof runPass>[1], y: GPUBuffer, yCount: number, out: GPUBuffer, width: number, t: number) {
  await runPass(ctx, record);
  return { y: new Uint32Array((await readF32(ctx, y, yCount)).buffer), out: await readU32(ctx, out, t * q8RowVec4s(width) * 4) };
}

// Where the engine builds tails: llvmpipe, whose atomics order the stores before them (GpuCaps.orderedAtomics).
describe.skipIf(!ctx.caps.orderedAtomics)('decode products with a tail', () => {
  // A Q8_0 producer (the block-walking kernel) and an F16 one (matvec-rows.wgsl), tails in both modes.
  const cases: Case[] = [
    { type: GgmlType.Q8_0, mode: 'q8_0', k: 576 },
    { type: GgmlType.Q4_K, mode: 'q8_K', k: 512 },
    { type: GgmlType.F16, mode: 'q8_0', k: 256 },
  ];

  it.each(cases.map((c) => [typeName(c.type), c.mode, c] as const))('%s product, RMSNorm tail into %s rows: the bits of the product then the norm pass', async (_, __, { type, mode, k }) => {
    // The residual stream: y += W x, then RMSNorm(y) quantized. n = width of y, several workgroups.
    const n = mode === 'q8_K' ? 768 : 576;
    const xq8 = type !== GgmlType.F16;
    const w = uploadRows(ctx, randomWeights(type, n, k, 3 + type));
    const normW = ctx.storage('norm.w', n * 4, randomF32(n, 5));
    const quantize = new QuantizeXKernel(ctx, type === GgmlType.Q4_K ? 'q8_K' : 'q8_0');
    const norm = new RmsNormKernel(ctx, 'serial', 'q8', mode);
    // A counter a group of the norm's values, one for the groups done, a partial sum a row and group.
    const counter = ctx.storage('tail.count', 4 * tailCounterWords({ kind: 'norm-q8', mode }, { n, inOffset: 0, inStride: n }));
    for (let t = 1; t <= matvecUpTo(ctx); t++) {
      const x = ctx.storage('x', t * k * 4, randomF32(t * k, 7 + t));
      const xq = ctx.storage('xq', t * q8RowVec4s(k) * 16);
      const y0 = randomF32(t * n, 11 + t);
      const tail: ProductTail = { kind: 'norm-q8', mode };
      const plain = new MatVecKernel(ctx, type, t, 'rows', { xq8 });
      const fused = new MatVecKernel(ctx, type, t, 'rows', { xq8, tail });
      const p = { t, n, k, xStride: xq8 ? q8RowVec4s(k) : k, accumulate: true };
      const readX = (pass: GPUComputePassEncoder, arena: Parameters<Parameters<typeof runPass>[1]>[1]) => {
        if (xq8) quantize.encode(pass, arena, quantize.bind(x, xq), { tokens: t, k });
      };

      const yA = ctx.storage('y.a', y0.byteLength, y0);
      const outA = ctx.storage('out.a', t * q8RowVec4s(n) * 16);
      const want = await outputs(
        (pass, arena) => {
          readX(pass, arena);
          const group = plain.bind(w, xq8 ? xq : x, yA);
          for (let i = 0; i < 2; i++) {
            plain.encode(pass, arena, group, p);
            norm.encode(pass, arena, norm.bind(yA, normW, outA), { rows: t, dim: n, eps: EPS });
          }
        },
        yA,
        t * n,
        outA,
        n,
        t,
      );

      const yB = ctx.storage('y.b', y0.byteLength, y0);
      const outB = ctx.storage('out.b', t * q8RowVec4s(n) * 16);
      const group = fused.bind(w, xq8 ? xq : x, yB, { tail: [counter, normW, outB] });
      // Twice in one pass, as a step runs a layer's products: the counter must be back at zero.
      const got = await outputs(
        (pass, arena) => {
          readX(pass, arena);
          for (let i = 0; i < 2; i++) fused.encode(pass, arena, group, { ...p, tail: { n, inOffset: 0, inStride: n, eps: EPS } });
        },
        yB,
        t * n,
        outB,
        n,
        t,
      );
      expect(got.y).toEqual(want.y);
      expect(got.out).toEqual(want.out);
      expect(got.out.some((v) => v !== 0)).toBe(true);
      // Every counter and partial sum is back at zero for the next product.
      expect((await readU32(ctx, counter, counter.size / 4)).every((v) => v === 0)).toBe(true);

      // Without the tail asked for: the product only, the tail's output untouched.
      const yC = ctx.storage('y.c', y0.byteLength, y0);
      const outC = ctx.storage('out.c', t * q8RowVec4s(n) * 16);
      const only = await outputs(
        (pass, arena) => {
          readX(pass, arena);
          const group = fused.bind(w, xq8 ? xq : x, yC, { tail: [counter, normW, outC] });
          for (let i = 0; i < 2; i++) fused.encode(pass, arena, group, p);
        },
        yC,
        t * n,
        outC,
        n,
        t,
      );
      expect(only.y).toEqual(want.y);
      expect(only.out.every((v) => v === 0)).toBe(true);
    }
  });

  // Q8_0 invocations compute 8 weight rows, F16 ones 4: a group's last contributor is counted either way.
  it.each(
    (
      [
        [GgmlType.Q8_0, 'q8_0'],
        [GgmlType.Q8_0, 'q8_K'],
        [GgmlType.F16, 'q8_0'],
      ] as const
    ).map(([type, mode]) => [typeName(type), mode, type] as const),
  )('%s gate|up product, gated-activation tail into %s rows: the bits of the product then the activation pass', async (_, mode, type) => {
    const [k, F] = [576, mode === 'q8_K' ? 768 : 1536];
    const xq8 = type !== GgmlType.F16;
    const w = uploadRows(ctx, randomWeights(type, 2 * F, k, 17));
    const quantize = new QuantizeXKernel(ctx);
    const act = new SwiGluKernel(ctx, 'silu', 'q8', mode);
    const counter = ctx.storage('tail.count', (F / 32) * 4);
    const tail: ProductTail = { kind: 'glu-q8', mode, activation: 'silu' };
    for (let t = 1; t <= matvecUpTo(ctx); t++) {
      const x = ctx.storage('x', t * k * 4, randomF32(t * k, 19 + t));
      const xq = ctx.storage('xq', t * q8RowVec4s(k) * 16);
      const p = { t, n: 2 * F, k, xStride: xq8 ? q8RowVec4s(k) : k };
      const plain = new MatVecKernel(ctx, type, t, 'rows', { xq8 });
      const fused = new MatVecKernel(ctx, type, t, 'rows', { xq8, tail });
      const xIn = xq8 ? xq : x;
      const [yA, yB] = [ctx.storage('y.a', t * 2 * F * 4), ctx.storage('y.b', t * 2 * F * 4)];
      const [outA, outB] = [ctx.storage('out.a', t * q8RowVec4s(F) * 16), ctx.storage('out.b', t * q8RowVec4s(F) * 16)];
      const want = await outputs(
        (pass, arena) => {
          if (xq8) quantize.encode(pass, arena, quantize.bind(x, xq), { tokens: t, k });
          plain.encode(pass, arena, plain.bind(w, xIn, yA), p);
          act.encode(pass, arena, act.bind(yA, yA, outA), { tokens: t, n: F, gateOffset: 0, upOffset: F, inStride: 2 * F });
        },
        yA,
        t * 2 * F,
        outA,
        F,
        t,
      );
      const got = await outputs(
        (pass, arena) => {
          if (xq8) quantize.encode(pass, arena, quantize.bind(x, xq), { tokens: t, k });
          fused.encode(pass, arena, fused.bind(w, xIn, yB, { tail: [counter, outB] }), { ...p, tail: { n: F, inOffset: 0, inStride: 2 * F, up: F } });
        },
        yB,
        t * 2 * F,
        outB,
        F,
        t,
      );
      expect(got.y).toEqual(want.y);
      expect(got.out).toEqual(want.out);
      expect(got.out.some((v) => v !== 0)).toBe(true);
      expect(Array.from(await readU32(ctx, counter, F / 32)).every((v) => v === 0)).toBe(true);
    }
  });

  // RoPE + KV store after a stacked Q|K|V product: Q rotated in place, K and V into the paged cache.
  it.each([
    { name: 'normal order, f16 cache', type: GgmlType.Q8_0, heads: 4, kvHeads: 2, hd: 32, nRot: 32, neox: false, kv: 'f16' as const, factors: false },
    { name: 'NeoX, partial rotary, f32 cache, frequency factors', type: GgmlType.Q8_0, heads: 2, kvHeads: 1, hd: 64, nRot: 32, neox: true, kv: 'f32' as const, factors: true },
    { name: 'F16 weights, normal order, f16 cache', type: GgmlType.F16, heads: 3, kvHeads: 1, hd: 16, nRot: 16, neox: false, kv: 'f16' as const, factors: false },
  ])('Q|K|V product, RoPE + KV-store tail ($name): the bits of the product then the RoPE/KV-store pass', async (c) => {
    const k = 128;
    const rows = (c.heads + 2 * c.kvHeads) * c.hd;
    const kvDim = c.kvHeads * c.hd;
    const xq8 = c.type !== GgmlType.F16;
    const w = uploadRows(ctx, randomWeights(c.type, rows, k, 23));
    const [pageSize, maxPages, numPages] = [4, 4, 8];
    const pageTable = Uint32Array.from({ length: 2 * maxPages }, (_, i) => (i * 3) % numPages);
    const cacheBytes = numPages * pageSize * kvDim * (c.kv === 'f16' ? 2 : 4);
    const factors = ctx.storage('factors', (c.nRot / 2) * 4, Float32Array.from({ length: c.nRot / 2 }, (_, i) => (c.factors ? 1 + i / 7 : 1)));
    const quantize = new QuantizeXKernel(ctx);
    const store = new RopeKvStoreKernel(ctx, 'vec4', c.kv);
    const tail: ProductTail = { kind: 'rope-kv', kv: c.kv };
    const rope = { heads: c.heads, kvHeads: c.kvHeads, headDim: c.hd, pageSize, maxPages, nRot: c.nRot, neox: c.neox, freqBase: 10000, freqScale: 0.5, useFactors: c.factors };
    const counter = ctx.storage('tail.count', 64);
    for (let t = 1; t <= matvecUpTo(ctx); t++) {
      // Two sequences, each token in its own cache slot (pages of 4, at most 4 a sequence: positions < 16).
      const batch = Array.from({ length: t }, (_, i) => ({ seq: i % 2, pos: 2 + 3 * (i >> 1) }));
      const positions = ctx.storage('pos', 4 * t, Uint32Array.from(batch.map((b) => b.pos)));
      const seqs = ctx.storage('seq', 4 * t, Uint32Array.from(batch.map((b) => b.seq)));
      const pages = ctx.storage('pages', pageTable.byteLength, pageTable);
      const x = ctx.storage('x', t * k * 4, randomF32(t * k, 29 + t));
      const xq = ctx.storage('xq', t * q8RowVec4s(k) * 16);
      const xIn = xq8 ? xq : x;
      const p = { t, n: rows, k, xStride: xq8 ? q8RowVec4s(k) : k, yStride: rows };
      const plain = new MatVecKernel(ctx, c.type, t, 'rows', { xq8 });
      const fused = new MatVecKernel(ctx, c.type, t, 'rows', { xq8, tail });
      const results = async (withTail: boolean) => {
        const y = ctx.storage('qkv', t * rows * 4);
        const [kc, vc] = [ctx.storage('k', cacheBytes), ctx.storage('v', cacheBytes)];
        await runPass(ctx, (pass, arena) => {
          if (xq8) quantize.encode(pass, arena, quantize.bind(x, xq), { tokens: t, k });
          if (withTail) {
            fused.encode(pass, arena, fused.bind(w, xIn, y, { tail: [counter, positions, seqs, pages, factors, kc, vc] }), { ...p, tail: { n: rows, inOffset: 0, inStride: rows, rope } });
          } else {
            plain.encode(pass, arena, plain.bind(w, xIn, y), p);
            store.encode(pass, arena, store.bind(y, positions, seqs, pages, factors, kc, vc), { ...rope, tokens: t, tokenStride: rows });
          }
        });
        return [new Uint32Array(await readBuffer(ctx, y)), new Uint32Array(await readBuffer(ctx, kc)), new Uint32Array(await readBuffer(ctx, vc))];
      };
      const want = await results(false);
      const got = await results(true);
      for (let i = 0; i < 3; i++) expect(got[i], ['qkv', 'k cache', 'v cache'][i]).toEqual(want[i]);
      expect(want[1].some((v) => v !== 0) && want[2].some((v) => v !== 0)).toBe(true);
      expect(Array.from(await readU32(ctx, counter, c.heads + 2 * c.kvHeads)).every((v) => v === 0)).toBe(true);
    }
  });

  it('refuses what it cannot run: tails outside the rows variant, a gated input, missing buffers or parameters', () => {
    const tail: ProductTail = { kind: 'norm-q8', mode: 'q8_0' };
    expect(() => new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'coop', { tail })).toThrow(/rows variant/);
    expect(() => new MatVecKernel(ctx, GgmlType.F16, 1, 'rows', { tail, glu: 'silu' })).toThrow(/without a gated input/);
    const kern = new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'rows', { xq8: true, tail });
    const b = ctx.storage('b', 4096);
    expect(() => kern.bind(b, b, b)).toThrow(/needs 3 tail buffers/);
    expect(() => new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'rows', { xq8: true }).bind(b, b, b, { tail: [b, b, b] })).toThrow(/built without a tail/);
    const group = kern.bind(ctx.storage('w', 64 * 1024), b, ctx.storage('y', 4096), { tail: [ctx.storage('c', 16), b, ctx.storage('o', 4096)] });
    const glu = new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'rows', { xq8: true, tail: { kind: 'glu-q8', mode: 'q8_0', activation: 'silu' } });
    const gluGroup = glu.bind(ctx.storage('w', 64 * 1024), b, ctx.storage('y', 4096), { tail: [ctx.storage('c', 16), ctx.storage('o', 4096)] });
    expect(() => glu.encode(ctx.device.createCommandEncoder().beginComputePass(), new ParamArena(ctx, 4), gluGroup, { t: 1, n: 96, k: 64, tail: { n: 32, inOffset: 0, inStride: 64, up: 32 } })).toThrow(/one dispatch of gate then up rows/);
    expect(() => kern.encode(ctx.device.createCommandEncoder().beginComputePass(), new ParamArena(ctx, 4), group, { t: 1, n: 32, k: 64, tail: { n: 64, inOffset: 0, inStride: 64, eps: 1e-5 } })).toThrow(/one dispatch of all the norm's 64 rows, not 32 rows from row 0/);
    return expect(runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t: 1, n: 64, k: 64, tail: { n: 64, inOffset: 0, inStride: 64 } }))).rejects.toThrow(/needs its epsilon/);
  });
});
