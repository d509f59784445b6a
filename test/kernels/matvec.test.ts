import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatVecKernel, type MatVecVariant } from '../../kernels/matvec.ts';
import { deviceLayout, planRowShards } from '../../kernels/quant/index.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { randomWeights, referenceProduct, uploadRows, WEIGHT_TYPES } from '../quant/weights.ts';

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
      const want = Float64Array.from(y0);
      for (let i = 0; i < t; i++) for (let j = 0; j < n; j++) want[yOffset + i * yStride + j] += ref[i * n + j];
      expect(maxRelError(got, want)).toBeLessThan(TOL);
    });

    it(`${variant}: y offset, stride and rows multiples of 4 (the rows kernel's four-row stores), accumulate`, async () => {
      const [t, n, k] = [3, 72, colsFor(type)];
      const w = randomWeights(type, n, k, 23 + type);
      const [yOffset, yStride] = [8, n + 4];
      const x = randomF32(t * k, 11);
      const y0 = randomF32(yOffset + t * yStride + 4, 12);
      const kern = new MatVecKernel(ctx, type, t, variant);
      const by = ctx.storage('y', y0.byteLength, y0);
      const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
      await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k, yOffset, yStride, accumulate: true }));
      const ref = referenceProduct(w, x, t);
      const want = Float64Array.from(y0);
      for (let i = 0; i < t; i++) for (let j = 0; j < n; j++) want[yOffset + i * yStride + j] += ref[i * n + j];
      // Every value outside the product's rows and columns is left as it was.
      expect(maxRelError(await readF32(ctx, by, y0.length), want)).toBeLessThan(TOL);
    });

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
