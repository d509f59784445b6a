import { describe, expect, it } from 'vitest';
import { typeName } from '../../ggml/types.ts';
import { EmbeddingKernel } from '../../kernels/embedding.ts';
import { planRowShards } from '../../kernels/quant/index.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, rng } from '../helpers/random.ts';
import { randomWeights, uploadRows, WEIGHT_TYPES } from '../quant/weights.ts';

const ctx = await testContext();

function randomIds(count: number, rows: number, seed: number): Uint32Array {
  const r = rng(seed);
  const ids = new Uint32Array(count);
  for (let i = 0; i < count; i++) ids[i] = Math.floor(r() * rows);
  ids[0] = 0;
  ids[count - 1] = rows - 1;
  return ids;
}

describe.each(WEIGHT_TYPES.map((t) => [typeName(t), t] as const))('embedding %s', (_, type) => {
  it('looks up rows, decoding every element like the CPU reference', async () => {
    const [rows, dim, count] = [300, 512, 37];
    const w = randomWeights(type, rows, dim, 91 + type);
    const ids = randomIds(count, rows, 19);
    const kern = new EmbeddingKernel(ctx, type);
    const by = ctx.storage('y', count * dim * 4);
    const group = kern.bind(uploadRows(ctx, w), ctx.storage('ids', ids.byteLength, ids), by);
    await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { count, dim, rows }));
    const want = new Float32Array(count * dim);
    ids.forEach((id, i) => want.set(w.values.subarray(id * dim, (id + 1) * dim), i * dim));
    // Decoding may differ from the reference only by a fused multiply-add's last bit.
    expect(maxRelError(await readF32(ctx, by, count * dim), want)).toBeLessThan(1e-6);
  });

  it('writes each token once across row shards, with offsets, strides and a scale', async () => {
    const [rows, dim, count] = [200, 256, 20];
    const w = randomWeights(type, rows, dim, 101 + type);
    const shards = planRowShards(type, rows, dim, 70 * (w.raw.length / rows));
    expect(shards.length).toBeGreaterThan(2);
    const [idsOffset, yOffset, yStride, scale] = [3, 5, dim + 4, 1.5];
    const ids = new Uint32Array(idsOffset + count);
    ids.set(randomIds(count, rows, 20), idsOffset);
    const y0 = new Float32Array(yOffset + count * yStride).fill(-7);
    const kern = new EmbeddingKernel(ctx, type);
    const bids = ctx.storage('ids', ids.byteLength, ids);
    const by = ctx.storage('y', y0.byteLength, y0);
    const groups = shards.map((s) => kern.bind(uploadRows(ctx, w, s.rowBegin, s.rows), bids, by));
    await runPass(ctx, (pass, arena) =>
      shards.forEach((s, i) => kern.encode(pass, arena, groups[i], { count, dim, idsOffset, yOffset, yStride, rowBegin: s.rowBegin, rows: s.rows, scale })),
    );
    const want = Float32Array.from(y0);
    for (let i = 0; i < count; i++) {
      const id = ids[idsOffset + i];
      for (let d = 0; d < dim; d++) want[yOffset + i * yStride + d] = w.values[id * dim + d] * scale;
    }
    expect(maxRelError(await readF32(ctx, by, y0.length), want)).toBeLessThan(1e-6);
  });
});
