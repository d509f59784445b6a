/** Random packed weights and float64 references for the weight-product and embedding kernel tests. */
import { dequantize, quantize } from '../../engine/gguf/quant/index.ts';
import { GgmlType } from '../../ggml/types.ts';
import { deviceLayout } from '../../kernels/quant/index.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { uploadWeights, type WeightStore } from '../../kernels/runtime/weights.ts';
import { randomF32 } from '../helpers/random.ts';

export const WEIGHT_TYPES = [GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K] as const;

export interface TestWeights {
  type: GgmlType;
  rows: number;
  cols: number;
  /** GGUF bytes. */
  raw: Uint8Array;
  /** What the kernels should see: the CPU reference decode of raw. */
  values: Float32Array;
}

export function randomWeights(type: GgmlType, rows: number, cols: number, seed: number): TestWeights {
  const raw = quantize(type, randomF32(rows * cols, seed, 0.5));
  return { type, rows, cols, raw, values: dequantize(type, raw, rows * cols) };
}

/** GGUF bytes of rows begin .. begin + count. */
export function rawRows(w: TestWeights, begin: number, count: number): Uint8Array {
  const rowBytes = w.raw.length / w.rows;
  return w.raw.subarray(begin * rowBytes, (begin + count) * rowBytes);
}

/**
 * Upload rows begin .. begin + count in the GPU layout of this device (deviceLayout: rows in groups on
 * CPU rasterisers) to the device's weight store (a texture on llvmpipe), as the loader does.
 */
export function uploadRows(ctx: KernelContext, w: TestWeights, begin = 0, count = w.rows): WeightStore {
  const packed = deviceLayout(ctx.caps, w.type).repack(rawRows(w, begin, count), count, w.cols);
  return uploadWeights(ctx.device, ctx.caps, 'w', packed);
}

/** `y0` with `ref` (t rows of n values, as referenceProduct gives) added from yOffset, rows yStride apart: what an accumulating product leaves in y. */
export function accumulated(y0: Float32Array, ref: Float64Array, t: number, n: number, yOffset: number, yStride: number): Float64Array {
  const want = Float64Array.from(y0);
  for (let i = 0; i < t; i++) for (let j = 0; j < n; j++) want[yOffset + i * yStride + j] += ref[i * n + j];
  return want;
}

/** y[t, n] = sum_k x[xOffset + t * xStride + k] * W[n, k] in float64, as a dense t x rows array. */
export function referenceProduct(w: TestWeights, x: Float32Array, t: number, xOffset = 0, xStride = w.cols): Float64Array {
  const y = new Float64Array(t * w.rows);
  for (let i = 0; i < t; i++) {
    for (let n = 0; n < w.rows; n++) {
      let s = 0;
      for (let k = 0; k < w.cols; k++) s += x[xOffset + i * xStride + k] * w.values[n * w.cols + k];
      y[i * w.rows + n] = s;
    }
  }
  return y;
}
