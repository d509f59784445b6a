/**
 * x quantized to int8 blocks (quantize-x-q8.wgsl, and the passes that write it themselves) and the CPU
 * rasterisers' block-walking products (Q8_0, Q4_0, Q4_K) that read it (ProductOptions.xq8): the quantization is llama.cpp's for activations (d = max|x| / 127 kept
 * as f16, every value within half a step), and the product equals the float64 product of the weights
 * with the quantized x the GPU wrote.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatMulKernel } from '../../kernels/matmul.ts';
import { MatVecKernel } from '../../kernels/matvec.ts';
import { RmsNormKernel } from '../../kernels/rmsnorm.ts';
import { SwiGluKernel } from '../../kernels/swiglu.ts';
import { planRowShards } from '../../kernels/quant/index.ts';
import { QuantizeXKernel, q8BlockLayout, q8RowVec4s, xqGroup } from '../../kernels/quantize-x.ts';
import { readBuffer, readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { randomWeights, uploadRows } from '../quant/weights.ts';

const ctx = await testContext();

/** f32 → nearest f16 value, as a number. */
function toF16(v: number): number {
  const f = new Float32Array([v]);
  const u = new Uint32Array(f.buffer)[0];
  const exp = ((u >> 23) & 0xff) - 127 + 15;
  if (v === 0) return 0;
  const mant = u & 0x7fffff;
  const shift = exp <= 0 ? 14 - exp : 13;
  const m = (mant | (exp <= 0 ? 0x800000 : 0)) / 2 ** shift;
  const r = Math.round(m) === m + 0.5 && Math.round(m) % 2 === 1 ? Math.round(m) - 1 : Math.round(m);
  return Math.sign(v) * (exp <= 0 ? r * 2 ** -24 : (1 + (r - 1024 * Math.floor(r / 1024)) / 1024) * 2 ** (exp - 15 + Math.floor(r / 2048)));
}

/** The quantized rows the GPU wrote: per row, per block, 32 int8 values and the scale. */
function readQuantized(buf: ArrayBuffer, t: number, k: number): { q: Int8Array; d: Float32Array } {
  const rowVec4s = q8RowVec4s(k);
  const bytes = new Uint8Array(buf);
  const f32 = new Float32Array(buf);
  const q = new Int8Array(t * k);
  const d = new Float32Array((t * k) / 32);
  for (let r = 0; r < t; r++) {
    for (let b = 0; b < k / 32; b++) {
      const at = q8BlockLayout(b);
      const o = (r * rowVec4s + at.quants) * 16;
      for (let i = 0; i < 32; i++) q[r * k + b * 32 + i] = (bytes[o + i] << 24) >> 24;
      d[(r * k) / 32 + b] = f32[(r * rowVec4s + at.scale) * 4 + at.component];
    }
  }
  return { q, d };
}

describe('x quantized to int8 blocks for the block-walking products (Q8_0, Q4_0, Q4_K)', () => {
  it('every value lies within half a step of x, with d = max|x| / 127 rounded to f16; an all-zero block stays zero', async () => {
    const [t, k, xOffset, xStride] = [5, 96, 8, 104];
    const x = randomF32(xOffset + t * xStride, 31, 3);
    x.fill(0, xOffset + 2 * xStride + 32, xOffset + 2 * xStride + 64); // row 2, block 1
    const quantize = new QuantizeXKernel(ctx);
    const xq = ctx.storage('xq', t * q8RowVec4s(k) * 16);
    const group = quantize.bind(ctx.storage('x', x.byteLength, x), xq);
    await runPass(ctx, (pass, arena) => quantize.encode(pass, arena, group, { tokens: t, k, xOffset, xStride }));
    const { q, d } = readQuantized(await readBuffer(ctx, xq), t, k);
    for (let r = 0; r < t; r++) {
      for (let b = 0; b < k / 32; b++) {
        const xs = Array.from(x.subarray(xOffset + r * xStride + b * 32, xOffset + r * xStride + b * 32 + 32));
        const amax = Math.max(...xs.map(Math.abs));
        const db = d[(r * k) / 32 + b];
        expect(db).toBe(toF16(amax / 127));
        xs.forEach((v, i) => {
          const qi = q[r * k + b * 32 + i];
          expect(Math.abs(qi)).toBeLessThanOrEqual(127);
          if (amax === 0) expect(qi).toBe(0);
          else expect(Math.abs(v * (127 / amax) - qi)).toBeLessThanOrEqual(0.5 + 1e-4);
        });
      }
    }
  });

  it('in q8_K mode (K-quant products) 256 values share d = 1 / (-127 / the value of largest magnitude), q = min(127, round(x / d))', async () => {
    const [t, k] = [2, 512];
    const x = randomF32(t * k, 35, 3);
    x[7] = 9; // row 0, group 0: a positive extreme maps to -127 (and negative values up to +127)
    x[k + 300] = -9; // row 1, group 1: a negative one to -127 as well
    const quantize = new QuantizeXKernel(ctx, 'q8_K');
    const xq = ctx.storage('xq', t * q8RowVec4s(k) * 16);
    const group = quantize.bind(ctx.storage('x', x.byteLength, x), xq);
    await runPass(ctx, (pass, arena) => quantize.encode(pass, arena, group, { tokens: t, k }));
    const { q, d } = readQuantized(await readBuffer(ctx, xq), t, k);
    for (let r = 0; r < t; r++) {
      for (let g = 0; g < k / 256; g++) {
        const xs = Array.from(x.subarray(r * k + g * 256, r * k + g * 256 + 256));
        const extreme = xs.reduce((m, v) => (Math.abs(v) > Math.abs(m) ? v : m), 0);
        const iscale = Math.fround(-127 / extreme);
        for (let b = 0; b < 8; b++) expect(d[(r * k + g * 256) / 32 + b]).toBe(Math.fround(1 / iscale));
        xs.forEach((v, i) => {
          const want = Math.min(127, Math.round(Math.fround(v * iscale))) + 0; // + 0: no -0
          // Round half to even differs from Math.round only on exact halves, which random values never hit.
          expect(q[r * k + g * 256 + i]).toBe(want);
        });
      }
    }
    expect(q[7]).toBe(-127);
    expect(q[k + 300]).toBe(-127);
  });

  // The tiled kernel (prefill) and the matrix-vector kernel (decode), for each type walked by blocks.
  const products = [GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K].flatMap((type) => [
    { name: `${typeName(type)} tiled, 19 rows of x`, type, t: 19, kernel: () => new MatMulKernel(ctx, type, 'regs', { xq8: true }) },
    { name: `${typeName(type)} tiled, 40 rows of x (the wide token block)`, type, t: 40, kernel: () => new MatMulKernel(ctx, type, 'regs', { xq8: true }) },
    { name: `${typeName(type)} tiled with 12 weight rows an invocation, 40 rows of x`, type, t: 40, kernel: () => new MatMulKernel(ctx, type, 'regs', { xq8: true, tiledRows: 12 }) },
    ...[1, 2, 3, 8].map((t) => ({ name: `${typeName(type)} matrix-vector, ${t} row${t > 1 ? 's' : ''} of x`, type, t, kernel: () => new MatVecKernel(ctx, type, t, 'rows', { xq8: true }) })),
  ]);
  it.each(products)('$name: the product over row shards, with x and y slices and accumulate, is W times the quantized x', async ({ type, t, kernel }) => {
    // K-quant rows are whole 256-element blocks.
    const [n, k] = [90, type === GgmlType.Q4_K || type === GgmlType.Q6_K ? 768 : 576];
    const w = randomWeights(type, n, k, 91);
    const shards = planRowShards(type, n, k, 40 * (w.raw.length / n) + 100);
    expect(shards.length).toBeGreaterThan(1);
    const [xOffset, xStride, yOffset, yStride] = [4, k + 8, 11, n + 9];
    const x = randomF32(xOffset + t * xStride, 32);
    const y0 = randomF32(yOffset + t * yStride, 33);
    const quantize = new QuantizeXKernel(ctx);
    const kern = kernel();
    const xq = ctx.storage('xq', t * q8RowVec4s(k) * 16);
    const by = ctx.storage('y', y0.byteLength, y0);
    const qGroup = quantize.bind(ctx.storage('x', x.byteLength, x), xq);
    const groups = shards.map((s) => kern.bind(uploadRows(ctx, w, s.rowBegin, s.rows), xq, by));
    await runPass(ctx, (pass, arena) => {
      quantize.encode(pass, arena, qGroup, { tokens: t, k, xOffset, xStride });
      shards.forEach((s, i) => kern.encode(pass, arena, groups[i], { t, n: s.rows, k, xOffset: 0, xStride: q8RowVec4s(k), yOffset, yStride, rowOffset: s.rowBegin, accumulate: true }));
    });
    const { q, d } = readQuantized(await readBuffer(ctx, xq), t, k);
    const want = Float64Array.from(y0);
    const exact = Float64Array.from(y0);
    for (let i = 0; i < t; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        let sx = 0;
        for (let c = 0; c < k; c++) {
          s += w.values[j * k + c] * q[i * k + c] * d[(i * k + c - (c % 32)) / 32];
          sx += w.values[j * k + c] * x[xOffset + i * xStride + c];
        }
        want[yOffset + i * yStride + j] += s;
        exact[yOffset + i * yStride + j] += sx;
      }
    }
    const got = await readF32(ctx, by, y0.length);
    expect(maxRelError(got, want)).toBeLessThan(1e-4);
    // And quantizing x costs little against the product with x itself: under 1% of the products' RMS.
    let err = 0;
    let norm = 0;
    for (let i = 0; i < got.length; i++) {
      err += (got[i] - exact[i]) ** 2;
      norm += (exact[i] - y0[i]) ** 2;
    }
    expect(Math.sqrt(err / norm)).toBeLessThan(0.01);
  });
});

describe('passes that write quantized x themselves', () => {
  /** Runs `record`, then returns the bytes of `buf` as words. */
  async function words(buf: GPUBuffer, record: (pass: GPUComputePassEncoder, arena: import('../../kernels/runtime/arena.ts').ParamArena) => void): Promise<Uint32Array> {
    await runPass(ctx, record);
    return new Uint32Array(await readBuffer(ctx, buf));
  }
  const cases = (['q8_0', 'q8_K'] as const).flatMap((mode) => [{ mode, io: 'q8' as const }, { mode, io: 'gather-q8' as const }]);
  // The quantized norm takes the norm's factor s on each block's scale and quantizes x * w (a block's
  // quants depend only on its values' ratios), so a decode product's tail can quantize each block before s
  // is known (matvec-tail-norm-q8.wgsl). Against the f32 norm followed by the quantize pass, that moves
  // a scale by rounding only and a quant only where a value lies within rounding of a half step.
  it.each(cases)('the $io norm in $mode mode writes the f32 norm quantized, the norm factor on the scales', async ({ io, mode }) => {
    const quantize = new QuantizeXKernel(ctx, mode);
    const dim = xqGroup(mode) * 3;
    const [rows, xOffset, xStride] = [3, 8, dim + 4];
    const x = ctx.storage('x', (xOffset + 4 * xStride) * 4, randomF32(xOffset + 4 * xStride, 41, 2));
    const w = ctx.storage('w', dim * 4, randomF32(dim, 42));
    const idx = ctx.storage('idx', 16, new Uint32Array([3, 0, 2, 0]));
    const gather = io === 'gather-q8';
    const plain = new RmsNormKernel(ctx, 'serial', gather ? 'gather' : 'out');
    const fused = new RmsNormKernel(ctx, 'serial', io, mode);
    const y = ctx.storage('y', rows * dim * 4);
    const viaPass = ctx.storage('xq.pass', rows * q8RowVec4s(dim) * 16);
    const direct = ctx.storage('xq.norm', rows * q8RowVec4s(dim) * 16);
    const p = { rows, dim, eps: 1e-5, xOffset, xStride };
    await runPass(ctx, (pass, arena) => {
      plain.encode(pass, arena, gather ? plain.bind(x, w, y, idx) : plain.bind(x, w, y), p);
      quantize.encode(pass, arena, quantize.bind(y, viaPass), { tokens: rows, k: dim });
    });
    await runPass(ctx, (pass, arena) => fused.encode(pass, arena, gather ? fused.bind(x, w, direct, idx) : fused.bind(x, w, direct), p));
    const want = readQuantized(await readBuffer(ctx, viaPass), rows, dim);
    const got = readQuantized(await readBuffer(ctx, direct), rows, dim);
    expect(want.q.some((v) => v !== 0)).toBe(true);
    // Scales: the same up to rounding (q8_0 keeps them as f16: an f16 step, 2^-10 of the value).
    const rel = mode === 'q8_0' ? 2 ** -10 : 4e-7;
    for (let b = 0; b < want.d.length; b++) expect(Math.abs(got.d[b] - want.d[b])).toBeLessThanOrEqual(rel * Math.abs(want.d[b]));
    // Quants: at most one step apart, and that only for a value on a rounding boundary (a handful at most).
    let moved = 0;
    for (let i = 0; i < want.q.length; i++) {
      expect(Math.abs(got.q[i] - want.q[i])).toBeLessThanOrEqual(1);
      if (got.q[i] !== want.q[i]) moved++;
    }
    expect(moved).toBeLessThanOrEqual(Math.ceil(want.q.length / 500));
  });

  const activations = (['q8_0', 'q8_K'] as const).flatMap((mode) => [{ mode, activation: 'silu' as const }, { mode, activation: 'gelu' as const }]);
  it.each(activations)('the $activation gated activation in $mode mode writes the bits of the f32 activation followed by the quantize pass', async ({ activation, mode }) => {
    const quantize = new QuantizeXKernel(ctx, mode);
    const [tokens, n] = [3, 2 * xqGroup(mode)];
    // Gate then up in each token's row of one fused buffer, as the gate|up product writes them.
    const gateUp = ctx.storage('gate-up', tokens * 2 * n * 4, randomF32(tokens * 2 * n, 43, 4));
    const plain = new SwiGluKernel(ctx, activation);
    const fused = new SwiGluKernel(ctx, activation, 'q8', mode);
    const act = ctx.storage('act', tokens * n * 4);
    const viaPass = ctx.storage('xq.pass', tokens * q8RowVec4s(n) * 16);
    const direct = ctx.storage('xq.act', tokens * q8RowVec4s(n) * 16);
    const p = { tokens, n, gateOffset: 0, upOffset: n, inStride: 2 * n };
    const want = await words(viaPass, (pass, arena) => {
      plain.encode(pass, arena, plain.bind(gateUp, gateUp, act), p);
      quantize.encode(pass, arena, quantize.bind(act, viaPass), { tokens, k: n });
    });
    const got = await words(direct, (pass, arena) => fused.encode(pass, arena, fused.bind(gateUp, gateUp, direct), p));
    expect(want.some((v) => v !== 0)).toBe(true);
    expect(Array.from(got)).toEqual(Array.from(want));
  });

  it('rejects shapes the quantized outputs cannot hold, naming them', async () => {
    const norm = new RmsNormKernel(ctx, 'serial', 'q8');
    const swiglu = new SwiGluKernel(ctx, 'silu', 'q8');
    const b = ctx.storage('b', 1024);
    await expect(runPass(ctx, (pass, arena) => norm.encode(pass, arena, norm.bind(b, b, ctx.storage('o', 1024)), { rows: 1, dim: 48, eps: 1e-5 }))).rejects.toThrow(/dim 48 must be a multiple of 32/);
    await expect(runPass(ctx, (pass, arena) => swiglu.encode(pass, arena, swiglu.bind(b, b, ctx.storage('o', 1024)), { tokens: 1, n: 64, upOffset: 2 }))).rejects.toThrow(/offsets and stride of 4/);
    expect(() => new RmsNormKernel(ctx, 'workgroup', 'q8')).toThrow(/CPU adapters/);
  });
});
