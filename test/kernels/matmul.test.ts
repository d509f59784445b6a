import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatMulKernel, tiledRowsFor, type MatMulVariant } from '../../kernels/matmul.ts';
import { matvecUpTo, selectMatmul, WeightMatmul } from '../../kernels/matmul-select.ts';
import { yVec4 } from '../../kernels/matmul-params.ts';
import { MatVecKernel } from '../../kernels/matvec.ts';
import { planRowShards } from '../../kernels/quant/index.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { accumulated, randomWeights, referenceProduct, uploadRows, WEIGHT_TYPES } from '../quant/weights.ts';
import { expectAlignedAccumulate } from './product-cases.ts';

const ctx = await testContext();
const VARIANTS: MatMulVariant[] = ['regs', 'tiles', 'tiles-vec4'];
const TOL = 1e-4;

/** `variant`'s kernel; tiles-vec4 on its own tile however small the grid (the tests' grids are). */
function tiled(type: GgmlType, variant: MatMulVariant): MatMulKernel {
  return new MatMulKernel(ctx, type, variant, variant === 'tiles-vec4' ? { vec4MinWorkgroups: 0 } : {});
}

function colsFor(type: GgmlType): number {
  return type === GgmlType.Q4_K || type === GgmlType.Q6_K ? 512 : 256;
}

describe.each(WEIGHT_TYPES.map((t) => [typeName(t), t] as const))('tiled matmul %s', (_, type) => {
  for (const variant of VARIANTS) {
    it(`${variant}, T=37 (not a multiple of the tile)`, async () => {
      const [t, n, k] = [37, 100, colsFor(type)];
      const w = randomWeights(type, n, k, 51 + type);
      const x = randomF32(t * k, 14);
      const kern = tiled(type, variant);
      const by = ctx.storage('y', t * n * 4);
      const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
      await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
      expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
    });

    if (variant === 'regs') {
      it('regs with 12 weight rows an invocation (tiledRowsFor), T=37 over more than one workgroup of rows', async () => {
        const [t, n, k] = [37, 230, colsFor(type)];
        const w = randomWeights(type, n, k, 53 + type);
        const x = randomF32(t * k, 18);
        const kern = new MatMulKernel(ctx, type, variant, { tiledRows: 12 });
        const by = ctx.storage('y', t * n * 4);
        const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
        await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
        expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
      });
    }

    if (variant !== 'regs') {
      // tiles-vec4 runs small grids with the 32 x 64 tile: here both ways (its own tile forced).
      for (const vec4MinWorkgroups of variant === 'tiles-vec4' ? [0, undefined] : [undefined]) {
        it(`${variant}${vec4MinWorkgroups === 0 ? ' (vec4 tile forced)' : ''}: T=70 and 300 rows, more than one workgroup tile each way`, async () => {
          const [t, n, k] = [70, 300, colsFor(type)];
          const w = randomWeights(type, n, k, 57 + type);
          const x = randomF32(t * k, 19);
          const kern = new MatMulKernel(ctx, type, variant, { vec4MinWorkgroups });
          const by = ctx.storage('y', t * n * 4);
          const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
          await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
          expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
        });
      }
    }

    it(`${variant}: row shards, x and y slices, accumulate`, async () => {
      const [t, n, k] = [37, 90, colsFor(type)];
      const w = randomWeights(type, n, k, 61 + type);
      const shards = planRowShards(type, n, k, 40 * (w.raw.length / n) + 100);
      expect(shards.length).toBeGreaterThan(1);
      const [xOffset, xStride, yOffset, yStride] = [7, k + 3, 11, n + 9];
      const x = randomF32(xOffset + t * xStride, 15);
      const y0 = randomF32(yOffset + t * yStride, 16);
      const kern = tiled(type, variant);
      const bx = ctx.storage('x', x.byteLength, x);
      const by = ctx.storage('y', y0.byteLength, y0);
      const groups = shards.map((s) => kern.bind(uploadRows(ctx, w, s.rowBegin, s.rows), bx, by));
      await runPass(ctx, (pass, arena) =>
        shards.forEach((s, i) =>
          kern.encode(pass, arena, groups[i], { t, n: s.rows, k, xOffset, xStride, yOffset, yStride, rowOffset: s.rowBegin, accumulate: true }),
        ),
      );
      const ref = referenceProduct(w, x, t, xOffset, xStride);
      expect(maxRelError(await readF32(ctx, by, y0.length), accumulated(y0, ref, t, n, yOffset, yStride))).toBeLessThan(TOL);
    });

    it(`${variant}: y offset, stride and rows multiples of 4 (the tiled kernels' four-row stores), accumulate`, () =>
      expectAlignedAccumulate(ctx, tiled(type, variant), randomWeights(type, 100, colsFor(type), 67 + type), 37, 19, TOL));

    if (type === GgmlType.F32 || type === GgmlType.F16 || type === GgmlType.BF16) {
      it(`${variant}: rows whose length is no multiple of 16 or 32`, async () => {
        const [t, n] = [9, 35];
        for (const k of [172, 45]) {
          const w = randomWeights(type, n, k, 71 + k);
          const x = randomF32(t * k, 17);
          const kern = tiled(type, variant);
          const by = ctx.storage('y', t * n * 4);
          const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
          await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
          expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
        }
      });
    }
  }
});

describe('four-row stores', () => {
  it('apply where the y offset with the shard row, the stride and the rows are multiples of 4', () => {
    expect(yVec4({ t: 37, n: 100, k: 64, yOffset: 8, yStride: 112 })).toBe(true);
    expect(yVec4({ t: 37, n: 40, k: 64, yOffset: 8, yStride: 112, rowOffset: 60 })).toBe(true);
    expect(yVec4({ t: 37, n: 40, k: 64, yOffset: 8, yStride: 112, rowOffset: 62 })).toBe(false);
    expect(yVec4({ t: 37, n: 100, k: 64, yOffset: 11 })).toBe(false);
    expect(yVec4({ t: 37, n: 100, k: 64, yStride: 109 })).toBe(false);
    expect(yVec4({ t: 1, n: 100, k: 64, yStride: 109 })).toBe(true);
    expect(yVec4({ t: 37, n: 35, k: 64 })).toBe(false);
  });
});

describe('kernel selection', () => {
  it('the tiled register block follows the model and the SIMD width: 12 rows where 16 would pad its widths or the SIMD is 256 bits, else 16', () => {
    const lanes16 = { ...ctx.caps, cpuLanes: 16 };
    // SmolLM2-135M: QKV 960, O and down 576, gate|up 3072; 16 rows pad 576 to 768.
    expect(tiledRowsFor(lanes16, [960, 576, 3072, 576])).toBe(12);
    // A 1B shape: every width a multiple of 256, where 12 rows would pad 2048 to 2112.
    expect(tiledRowsFor(lanes16, [3072, 2048, 16384, 2048])).toBe(16);
    // llvmpipe at 256 bits (AVX2): 12 rows, whose accumulators spill less, even where they pad.
    expect(tiledRowsFor({ ...ctx.caps, cpuLanes: 8 }, [3072, 2048, 16384, 2048])).toBe(12);
    // A rasteriser that names no vector width (SwiftShader) keeps the cost model.
    expect(tiledRowsFor({ ...ctx.caps, cpuLanes: 0 }, [3072, 2048, 16384, 2048])).toBe(16);
    expect(() => new MatMulKernel(ctx, GgmlType.Q8_0, 'regs', { tiledRows: 10 })).toThrow(/12 or 16|16 or 12/);
  });

  it('picks matrix-vector kernels for decode and the tiled kernel for prefill, per adapter', () => {
    const mv = selectMatmul(ctx, GgmlType.Q8_0, 3);
    expect(mv).toBeInstanceOf(MatVecKernel);
    expect((mv as MatVecKernel).variant).toBe(ctx.caps.software ? 'rows' : ctx.caps.subgroups ? 'subgroup' : 'coop');
    const mm = selectMatmul(ctx, GgmlType.Q8_0, 9);
    expect(mm).toBeInstanceOf(MatMulKernel);
    expect((mm as MatMulKernel).variant).toBe(ctx.caps.software ? 'regs' : 'tiles-vec4');
  });

  it('on CPU rasterisers every weight type turns tiled from 4 rows of x (matvecUpTo); GPUs keep matrix-vector kernels up to 8', () => {
    expect(matvecUpTo(ctx)).toBe(ctx.caps.software ? 3 : 8);
    // Q4_K, whose matrix-vector kernels once ran up to 8 rows here too.
    expect(selectMatmul(ctx, GgmlType.Q4_K, 3)).toBeInstanceOf(MatVecKernel);
    expect(selectMatmul(ctx, GgmlType.Q4_K, 4)).toBeInstanceOf(ctx.caps.software ? MatMulKernel : MatVecKernel);
  });

  it('one bind group serves every kernel of a WeightMatmul', async () => {
    const type = GgmlType.Q4_K;
    const [n, k] = [64, 256];
    const w = randomWeights(type, n, k, 81);
    const x = randomF32(40 * k, 18);
    const op = new WeightMatmul(ctx, type);
    const by = ctx.storage('y', 40 * n * 4);
    const group = op.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
    // Rows 0, 1-3 and 4-39 of x through three different kernels into one y.
    await runPass(ctx, (pass, arena) => {
      op.encode(pass, arena, group, { t: 1, n, k });
      op.encode(pass, arena, group, { t: 3, n, k, xOffset: k, yOffset: n });
      op.encode(pass, arena, group, { t: 36, n, k, xOffset: 4 * k, yOffset: 4 * n });
    });
    expect(maxRelError(await readF32(ctx, by, 40 * n), referenceProduct(w, x, 40))).toBeLessThan(TOL);
  });
});
