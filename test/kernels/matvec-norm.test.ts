/**
 * Norm-fused products: the GPU matrix-vector variants read RMSNorm(x) (the norm before the QKV and
 * gate|up products folded in) and match RMSNorm followed by the plain product, for every weight type,
 * 1 and several rows of x, with a bias and accumulating. CPU rasterisers' variant and the tiled
 * prefill kernel refuse the option.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatMulKernel } from '../../kernels/matmul.ts';
import type { ProductOptions } from '../../kernels/matmul-params.ts';
import { MatVecKernel, type MatVecVariant } from '../../kernels/matvec.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { randomWeights, referenceProduct, uploadRows, WEIGHT_TYPES } from '../quant/weights.ts';

const ctx = await testContext();
const VARIANTS: MatVecVariant[] = ctx.caps.subgroups ? ['coop', 'subgroup'] : ['coop'];
const EPS = 1e-5;

function rmsnormRows(x: Float32Array, g: Float32Array, t: number, k: number, offset: number, stride: number): Float32Array {
  const out = new Float32Array(t * k);
  for (let i = 0; i < t; i++) {
    let ss = 0;
    for (let j = 0; j < k; j++) ss += x[offset + i * stride + j] ** 2;
    const s = 1 / Math.sqrt(ss / k + EPS);
    for (let j = 0; j < k; j++) out[i * k + j] = x[offset + i * stride + j] * s * g[j];
  }
  return out;
}

describe.each(VARIANTS)('norm-fused matvec (%s)', (variant) => {
  for (const type of WEIGHT_TYPES) {
    for (const t of [1, 5]) {
      it(`${typeName(type)}, ${t} row${t > 1 ? 's' : ''} of x: W · RMSNorm(x), with a bias, added to y`, async () => {
        const n = 70;
        const k = type === GgmlType.Q4_K || type === GgmlType.Q6_K ? 512 : 288;
        const w = randomWeights(type, n, k, 50 + type + t);
        const [offset, stride] = [4, k + 8];
        const x = randomF32(offset + t * stride, 3 + t, 4);
        const g = randomF32(k, 9, 1);
        const bias = randomF32(n, 11);
        const y0 = randomF32(t * n, 12);
        const kern = new MatVecKernel(ctx, type, t, variant, { bias: true, norm: true });
        const by = ctx.storage('y', y0.byteLength, y0);
        const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by, { bias: ctx.storage('b', bias.byteLength, bias), norm: ctx.storage('g', g.byteLength, g) });
        await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k, xOffset: offset, xStride: stride, accumulate: true, normEps: EPS }));
        const want = referenceProduct(w, rmsnormRows(x, g, t, k, offset, stride), t).map((v, i) => v + bias[i % n] + y0[i]);
        expect(maxRelError(await readF32(ctx, by, t * n), want)).toBeLessThan(1e-4);
      });
    }
  }
});

// The workgroup shapes a GPU host's lab tries (bench/gpu/lab.ts), plain and norm-fused: rows past a
// subgroup's share loop, and lanes that load several units at once skip those past the row's end.
describe.each(VARIANTS)('matvec (%s) in other workgroup shapes', (variant) => {
  const shapes: NonNullable<ProductOptions['gpuGroup']>[] =
    variant === 'coop'
      ? [{ wg: 32, rows: 1 }, { wg: 64, rows: 2 }, { wg: 256, rows: 8 }]
      : [{ wg: 32, rows: 1 }, { wg: 32, rows: 4 }, { wg: 128, rows: 4 }, { wg: 32, rows: 1, units: 2 }, { wg: 32, rows: 2, units: 4 }];
  for (const gpuGroup of shapes) {
    for (const norm of [false, true]) {
      for (const type of [GgmlType.Q8_0, GgmlType.Q4_K]) {
        it(`${typeName(type)}${norm ? ', norm-fused' : ''}, ${gpuGroup.wg} invocations, ${gpuGroup.rows} rows a workgroup${gpuGroup.units ? `, ${gpuGroup.units} units a lane at once` : ''}`, async () => {
          // 18 units of 16 weights a row, or 144 (Q4_K, nine blocks): no subgroup size of 32 divides them.
          const [n, k, t] = [37, type === GgmlType.Q4_K ? 2304 : 288, 2];
          const w = randomWeights(type, n, k, 77 + gpuGroup.wg + gpuGroup.rows + (gpuGroup.units ?? 0));
          const x = randomF32(t * k, 5, 4);
          const g = randomF32(k, 6, 1);
          const kern = new MatVecKernel(ctx, type, t, variant, { norm, gpuGroup });
          const by = ctx.storage('y', t * n * 4);
          const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by, norm ? { norm: ctx.storage('g', g.byteLength, g) } : {});
          await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k, normEps: EPS }));
          const want = referenceProduct(w, norm ? rmsnormRows(x, g, t, k, 0, k) : x, t);
          expect(maxRelError(await readF32(ctx, by, t * n), want)).toBeLessThan(1e-4);
        });
      }
    }
  }
  if (variant === 'coop') {
    it('refuses units a lane at once (a subgroup option)', () => {
      expect(() => new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'coop', { gpuGroup: { wg: 64, rows: 4, units: 2 } })).toThrow(/subgroup variant/);
    });
  } else {
    it('refuses more than 4 units a lane at once', () => {
      expect(() => new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'subgroup', { gpuGroup: { wg: 32, rows: 1, units: 5 } })).toThrow(/outside 1..4/);
    });
  }
});

describe('norm-fused products are GPU matrix-vector only', () => {
  it('the CPU rasteriser variant and the tiled kernel refuse them', () => {
    expect(() => new MatVecKernel(ctx, GgmlType.Q8_0, 1, 'rows', { norm: true })).toThrow(/GPU variant/);
    expect(() => new MatMulKernel(ctx, GgmlType.Q8_0, undefined, { norm: true })).toThrow(/matrix-vector only/);
  });
});
