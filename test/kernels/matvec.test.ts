import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatVecKernel, type MatVecVariant } from '../../kernels/matvec.ts';
import { deviceLayout, planRowShards } from '../../kernels/quant/index.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { accumulated, randomWeights, referenceProduct, uploadRows, WEIGHT_TYPES } from '../quant/weights.ts';
import { expectAlignedAccumulate } from './product-cases.ts';

const ctx = await testContext();
// Every variant this adapter can run, not only the one it would pick.
const VARIANTS: MatVecVariant[] = ctx.caps.subgroups ? ['rows', 'coop', 'subgroup'] : ['rows', 'coop'];
const TOL = 1e-4;

function colsFor(type: GgmlType): number {
  return type === GgmlType.Q4_K || type === GgmlType.Q6_K ? 512 : 256;
}

describe.each(WEIGHT_TYPES.map((t) => [typeName(t), t] as const))('matvec %s', (_, type) => {
  for (const variant of VARIANTS) {
    for (const t of [1, 3]) {
      it(`${variant}, T=${t}`, async () => {
        const n = 300;
        const k = colsFor(type);
        const w = randomWeights(type, n, k, 11 + type);
        const x = randomF32(t * k, 5 + t);
        const kern = new MatVecKernel(ctx, type, t, variant);
        const by = ctx.storage('y', t * n * 4);
        const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
        await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
        expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
      });
    }

    if (variant === 'subgroup') {
      // Two subgroups over 8 rows, whatever the subgroup size: each subgroup's sums start again at zero
      // for each of its rows (matvec-dp4a's test of the same says why they once did not).
      it('subgroup: subgroups taking 4 rows each, T=3', async () => {
        const [t, n, k] = [3, 37, colsFor(type)];
        const w = randomWeights(type, n, k, 51 + type);
        const x = randomF32(t * k, 52);
        const kern = new MatVecKernel(ctx, type, t, variant, { gpuGroup: { wg: 2 * ctx.caps.subgroupMaxSize, rows: 8 } });
        const by = ctx.storage('y', t * n * 4);
        const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
        await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
        expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
      });
    }

    it(`${variant}: x and y slices of bigger buffers, accumulate`, async () => {
      const t = 3;
      const n = 70;
      const k = colsFor(type);
      const w = randomWeights(type, n, k, 21 + type);
      const [xOffset, xStride, yOffset, yStride] = [5, k + 7, 3, n + 5];
      const x = randomF32(xOffset + t * xStride, 9);
      const y0 = randomF32(yOffset + t * yStride + 4, 10);
      const kern = new MatVecKernel(ctx, type, t, variant);
      const by = ctx.storage('y', y0.byteLength, y0);
      const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
      await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k, xOffset, xStride, yOffset, yStride, accumulate: true }));
      const got = await readF32(ctx, by, y0.length);
      const ref = referenceProduct(w, x, t, xOffset, xStride);
      expect(maxRelError(got, accumulated(y0, ref, t, n, yOffset, yStride))).toBeLessThan(TOL);
    });

    it(`${variant}: y offset, stride and rows multiples of 4 (the rows kernel's four-row stores), accumulate`, () =>
      expectAlignedAccumulate(ctx, new MatVecKernel(ctx, type, 3, variant), randomWeights(type, 72, colsFor(type), 23 + type), 3, 11, TOL));

    it(`${variant}: one dispatch per row shard`, async () => {
      const n = 150;
      const k = colsFor(type);
      const w = randomWeights(type, n, k, 31 + type);
      // A binding limit that forces several shards.
      const shards = planRowShards(type, n, k, 60 * (w.raw.length / n) + 100);
      expect(shards.length).toBeGreaterThan(1);
      for (const t of [1, 3]) {
        const x = randomF32(t * k, 12 + t);
        const kern = new MatVecKernel(ctx, type, t, variant);
        const bx = ctx.storage('x', x.byteLength, x);
        const by = ctx.storage('y', t * n * 4);
        const groups = shards.map((s) => kern.bind(uploadRows(ctx, w, s.rowBegin, s.rows), bx, by));
        await runPass(ctx, (pass, arena) =>
          shards.forEach((s, i) => kern.encode(pass, arena, groups[i], { t, n: s.rows, k, rowOffset: s.rowBegin, yStride: n })),
        );
        expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
      }
    });

    if (type === GgmlType.Q8_0 || type === GgmlType.Q4_0 || type === GgmlType.Q6_K) {
      it(`${variant}: rows of an odd number of blocks (a padded scale header)`, async () => {
        const [t, n, k] = [2, 37, type === GgmlType.Q6_K ? 768 : 96];
        const w = randomWeights(type, n, k, 43);
        const x = randomF32(t * k, 13);
        const kern = new MatVecKernel(ctx, type, t, variant);
        const by = ctx.storage('y', t * n * 4);
        const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
        await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
        expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
      });
    }

    if (type === GgmlType.F32 || type === GgmlType.F16 || type === GgmlType.BF16) {
      it(`${variant}: rows whose length is no multiple of 16 (odd for F16)`, async () => {
        const t = 2;
        for (const k of [172, 45]) {
          const n = 33;
          const w = randomWeights(type, n, k, 41 + k);
          const x = randomF32(t * k, 13);
          const kern = new MatVecKernel(ctx, type, t, variant);
          const by = ctx.storage('y', t * n * 4);
          const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
          await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k }));
          expect(maxRelError(await readF32(ctx, by, t * n), referenceProduct(w, x, t))).toBeLessThan(TOL);
        }
      });
    }
  }
});
