/**
 * Products built with a bias (kernels/matmul-store-bias.wgsl): y (+)= W x + bias, in every matrix-vector
 * and tiled variant, with row shards (each shard adds its own rows' bias), slices and accumulate.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatMulKernel, type MatMulVariant } from '../../kernels/matmul.ts';
import { WeightMatmul } from '../../kernels/matmul-select.ts';
import { MatVecKernel, type MatVecVariant } from '../../kernels/matvec.ts';
import { planRowShards } from '../../kernels/quant/index.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { randomWeights, referenceProduct, uploadRows } from '../quant/weights.ts';

const ctx = await testContext();
const MATVEC: MatVecVariant[] = ctx.caps.subgroups ? ['rows', 'coop', 'subgroup'] : ['rows', 'coop'];
const MATMUL: MatMulVariant[] = ['regs', 'tiles', 'tiles-vec4'];
const TOL = 1e-4;

type Kernel = MatVecKernel | MatMulKernel;

/** y0 (if accumulating) + W x + bias[biasOffset + row], in y's layout. */
function reference(y0: Float32Array, ref: Float64Array, bias: Float32Array, p: { t: number; n: number; yOffset: number; yStride: number; biasOffset: number; accumulate: boolean }) {
  const want = Float64Array.from(y0);
  for (let i = 0; i < p.t; i++)
    for (let j = 0; j < p.n; j++) {
      const at = p.yOffset + i * p.yStride + j;
      want[at] = (p.accumulate ? want[at] : 0) + ref[i * p.n + j] + bias[p.biasOffset + j];
    }
  return want;
}

async function check(kern: Kernel, type: GgmlType, t: number, accumulate: boolean, seed: number) {
  const [n, k] = [90, 256];
  const w = randomWeights(type, n, k, seed);
  const shards = planRowShards(type, n, k, 40 * (w.raw.length / n) + 100);
  expect(shards.length).toBeGreaterThan(1);
  const [xOffset, xStride, yOffset, yStride, biasOffset] = [4, k + 4, 5, n + 3, 7];
  const x = randomF32(xOffset + t * xStride, seed + 1);
  const y0 = randomF32(yOffset + t * yStride, seed + 2);
  const bias = randomF32(biasOffset + n, seed + 3, 2);
  const bx = ctx.storage('x', x.byteLength, x);
  const by = ctx.storage('y', y0.byteLength, y0);
  const bb = ctx.storage('bias', bias.byteLength, bias);
  const groups = shards.map((s) => kern.bind(uploadRows(ctx, w, s.rowBegin, s.rows), bx, by, { bias: bb }));
  await runPass(ctx, (pass, arena) =>
    shards.forEach((s, i) =>
      kern.encode(pass, arena, groups[i], { t, n: s.rows, k, xOffset, xStride, yOffset, yStride, rowOffset: s.rowBegin, accumulate, biasOffset }),
    ),
  );
  const want = reference(y0, referenceProduct(w, x, t, xOffset, xStride), bias, { t, n, yOffset, yStride, biasOffset, accumulate });
  expect(maxRelError(await readF32(ctx, by, y0.length), want)).toBeLessThan(TOL);
}

describe.each([GgmlType.F32, GgmlType.Q8_0].map((t) => [typeName(t), t] as const))('products with a bias, %s', (_, type) => {
  for (const variant of MATVEC) {
    for (const t of [1, 3]) {
      it(`matvec ${variant}, T=${t}: row shards add their own rows' bias`, () => check(new MatVecKernel(ctx, type, t, variant, { bias: true }), type, t, false, 100 + t));
    }
    it(`matvec ${variant}: accumulate adds product and bias to y`, () => check(new MatVecKernel(ctx, type, 2, variant, { bias: true }), type, 2, true, 110));
  }
  for (const variant of MATMUL) {
    it(`matmul ${variant}, T=37`, () => check(new MatMulKernel(ctx, type, variant, { bias: true, vec4MinWorkgroups: 0 }), type, 37, false, 120));
    it(`matmul ${variant}: accumulate`, () => check(new MatMulKernel(ctx, type, variant, { bias: true, vec4MinWorkgroups: 0 }), type, 37, true, 130));
  }
});

describe('WeightMatmul with a bias', () => {
  it('one bind group (W, x, y, bias) serves the decode and prefill kernels, and a bias-less one refuses a bias', async () => {
    const type = GgmlType.F32;
    const [n, k] = [40, 64];
    const w = randomWeights(type, n, k, 140);
    const op = new WeightMatmul(ctx, type, { bias: true });
    const bias = randomF32(n, 141);
    for (const t of [1, 12]) {
      const x = randomF32(t * k, 142 + t);
      const by = ctx.storage('y', t * n * 4);
      const group = op.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by, { bias: ctx.storage('bias', bias.byteLength, bias) });
      await runPass(ctx, (pass, arena) => op.encode(pass, arena, group, { t, n, k }));
      const want = reference(new Float32Array(t * n), referenceProduct(w, x, t), bias, { t, n, yOffset: 0, yStride: n, biasOffset: 0, accumulate: false });
      expect(maxRelError(await readF32(ctx, by, t * n), want)).toBeLessThan(TOL);
    }
    const plain = new WeightMatmul(ctx, type);
    const b = ctx.storage('b', 16);
    expect(() => plain.bind(b, b, b, { bias: b })).toThrow(/built without a bias buffer/);
    expect(() => op.bind(b, b, b)).toThrow(/needs a bias buffer/);
  });
});
