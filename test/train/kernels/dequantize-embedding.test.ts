/** The trainer's f32 copies of packed weights, and its embedding gather. */
import { describe, expect, it } from 'vitest';
import { DequantizeKernel } from '../../../kernels/train/dequantize.ts';
import { TrainEmbeddingKernel } from '../../../kernels/train/embedding.ts';
import { GatherRowsKernel, NO_ROW } from '../../../kernels/train/gather-rows.ts';
import { deviceLayout } from '../../../kernels/quant/layouts.ts';
import { dequantize, quantize } from '../../../engine/gguf/quant/index.ts';
import { GgmlType, SUPPORTED_TYPES, typeName } from '../../../ggml/types.ts';
import { runPass, testContext } from '../../helpers/gpu.ts';
import * as ref from '../reference.ts';
import { f32, read, u32, zeros } from './io.ts';
import { uploadWeights } from '../../../kernels/runtime/weights.ts';

describe('train-dequantize', () => {
  for (const type of SUPPORTED_TYPES) {
    it(`${typeName(type)} rows in the engine's GPU layout become the CPU codec's f32 values`, async () => {
      const ctx = await testContext();
      const [rows, cols] = [6, 512];
      const values = Float32Array.from(ref.random(rows * cols, type + 1));
      const raw = quantize(type, values);
      const packed = deviceLayout(ctx.caps, type).repack(raw, rows, cols);
      const wb = uploadWeights(ctx.device, ctx.caps, 'w', packed);
      const out = zeros(ctx, 8 * cols);
      const k = new DequantizeKernel(ctx, type);
      // Rows 2..5 of the matrix land at rows 3..6 of the output.
      await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.kernel.bind([wb, out]), { rows: 4, cols, srcRow: 2, dstRow: 3 }));
      const got = await read(ctx, out, 8 * cols);
      const want = dequantize(type, raw, rows * cols);
      expect(Array.from(got.subarray(3 * cols, 7 * cols))).toEqual(Array.from(want.subarray(2 * cols, 6 * cols)));
      expect(got.subarray(0, 3 * cols).every((v) => v === 0)).toBe(true);
      if (type === GgmlType.F32) expect(Array.from(want)).toEqual(Array.from(values));
    });
  }
});

describe('train-embedding', () => {
  it('gathers and scales rows', async () => {
    const ctx = await testContext();
    const k = new TrainEmbeddingKernel(ctx);
    const [V, dim] = [10, 12];
    const table = Float32Array.from(ref.random(V * dim, 3));
    const ids = [4, 0, 9, 4];
    const [tb, ib, xb] = [f32(ctx, table), u32(ctx, ids), zeros(ctx, ids.length * dim)];
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.kernel.bind([tb, ib, xb]), { tokens: ids.length, dim, scale: 2 }));
    const got = await read(ctx, xb, ids.length * dim);
    ids.forEach((id, t) => expect(Array.from(got.subarray(t * dim, (t + 1) * dim))).toEqual(Array.from(table.subarray(id * dim, (id + 1) * dim)).map((v) => 2 * v)));
  });
});

describe('train-gather-rows', () => {
  it('picks rows by index and writes zeros for NO_ROW', async () => {
    const ctx = await testContext();
    const k = new GatherRowsKernel(ctx);
    const dim = 5;
    const x = Float32Array.from(ref.random(4 * dim, 9));
    const index = [2, NO_ROW, 0, NO_ROW, 3];
    const [xb, ib, ob] = [f32(ctx, x), u32(ctx, index), f32(ctx, ref.random(index.length * dim, 10))];
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.kernel.bind([xb, ib, ob]), { rows: index.length, dim }));
    const got = await read(ctx, ob, index.length * dim);
    index.forEach((r, t) => {
      const want = r === NO_ROW ? new Array(dim).fill(0) : Array.from(x.subarray(r * dim, (r + 1) * dim));
      expect(Array.from(got.subarray(t * dim, (t + 1) * dim))).toEqual(want);
    });
  });
});
