/**
 * Weight-product cases shared by the matrix-vector and tiled kernel tests (matvec.test.ts, matmul.test.ts),
 * and the run over quantized x shared by the x-window and x-texture tests.
 */
import { expect } from 'vitest';
import type { ParamArena } from '../../kernels/runtime/arena.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import type { MatmulParams } from '../../kernels/matmul-params.ts';
import { QuantizeXKernel, q8RowVec4s } from '../../kernels/quantize-x.ts';
import type { WeightStore } from '../../kernels/runtime/weights.ts';
import { readF32, recordLabels, runPass, runStep } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';
import { accumulated, referenceProduct, uploadRows, type TestWeights } from '../quant/weights.ts';

interface Product {
  bind(w: WeightStore, x: GPUBuffer, y: GPUBuffer): GPUBindGroup;
  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: MatmulParams): void;
}

/**
 * `kern` over `t` rows of x into y whose offset, stride and rows are multiples of 4 (the kernels' four-row
 * stores), accumulating: every value of y is y0 plus the product where the product writes, y0 elsewhere.
 */
export async function expectAlignedAccumulate(ctx: KernelContext, kern: Product, w: TestWeights, t: number, seed: number, tol: number): Promise<void> {
  const [n, k] = [w.rows, w.cols];
  const [yOffset, yStride] = [8, n + 12];
  const x = randomF32(t * k, seed);
  const y0 = randomF32(yOffset + t * yStride + 4, seed + 1);
  const by = ctx.storage('y', y0.byteLength, y0);
  const group = kern.bind(uploadRows(ctx, w), ctx.storage('x', x.byteLength, x), by);
  await runPass(ctx, (pass, arena) => kern.encode(pass, arena, group, { t, n, k, yOffset, yStride, accumulate: true }));
  const want = accumulated(y0, referenceProduct(w, x, t), t, n, yOffset, yStride);
  expect(maxRelError(await readF32(ctx, by, y0.length), want)).toBeLessThan(tol);
}

/**
 * Runs `kern` (a tiled product, or WeightMatmul) over x quantized into `xq`, accumulating into y from
 * offset 4: in a plain pass, or `inStep` in an open step, where a product may copy its x into a texture
 * (kernels/matmul-x-texture.ts). The result and the labels of the kernels dispatched after the quantize.
 */
export async function runOverQuantizedX(
  ctx: KernelContext,
  kern: { encode: (pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: MatmulParams) => void },
  group: GPUBindGroup,
  xq: GPUBuffer,
  x: GPUBuffer,
  y: GPUBuffer,
  p: { t: number; n: number; k: number; yStride: number },
  inStep = false,
): Promise<{ y: Float32Array; labels: string[] }> {
  const quantize = new QuantizeXKernel(ctx);
  const labels: string[] = [];
  await (inStep ? runStep : runPass)(ctx, (pass, arena) => {
    quantize.encode(pass, arena, quantize.bind(x, xq), { tokens: p.t, k: p.k });
    recordLabels(arena, labels);
    kern.encode(pass, arena, group, { ...p, xStride: q8RowVec4s(p.k), yOffset: 4, accumulate: true });
  });
  return { y: await readF32(ctx, y, 4 + p.t * p.yStride), labels };
}
