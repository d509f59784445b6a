/**
 * Q8_0 products that read x quantized to int8 blocks, for tiled (prefill-sized) steps on CPU rasterisers:
 * one quantize pass per product, then the Q8_0 tiled kernel loads three vec4s per token and block instead
 * of eight. Every storage load there is a loop over the SIMD lanes, so this took the 64-token prefill
 * products of SmolLM2-135M on llvmpipe from 500 to 375 ms. The arithmetic is llama.cpp's CPU backend's
 * for Q8_0 weights: x blocks of 32 with an f16 scale, exact integer sums per block.
 */
import { GgmlType } from '../../ggml/types.ts';
import { MatMulKernel } from '../../kernels/matmul.ts';
import { QuantizeXKernel, q8RowVec4s } from '../../kernels/quantize-x.ts';
import type { ParamArena } from '../../kernels/runtime/arena.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import type { MatrixIo, WeightMatrix } from './matrix.ts';

export interface QuantizedXProducts {
  /** Whether `w` read through `io` can take quantized x. */
  applies(w: WeightMatrix, io: MatrixIo): boolean;
  /** The product with quantized x; `encode` records the quantize pass and the product. */
  bind(w: WeightMatrix, x: GPUBuffer, y: GPUBuffer, io: MatrixIo): { encode(pass: GPUComputePassEncoder, arena: ParamArena, tokens: number): void };
}

export function createQuantizedXProducts(ctx: KernelContext): QuantizedXProducts | undefined {
  if (!ctx.caps.software) return undefined;
  const quantize = new QuantizeXKernel(ctx);
  const kernels = new Map<boolean, MatMulKernel>();
  const kernelFor = (bias: boolean) => {
    let k = kernels.get(bias);
    if (!k) kernels.set(bias, (k = new MatMulKernel(ctx, GgmlType.Q8_0, 'regs', { bias, xq8: true })));
    return k;
  };
  // One quantized copy per x buffer: products reading the same x in a step share its buffer, and each
  // quantizes it again just before it reads it (the step's passes run in order).
  const copies = new Map<GPUBuffer, GPUBuffer>();
  const copyOf = (x: GPUBuffer) => {
    let q = copies.get(x);
    // 32 f32 (128 bytes) become three vec4s (48 bytes); rows are whole blocks, at most as many as fit in x.
    if (!q) copies.set(x, (q = ctx.storage(`${x.label}.q8`, Math.ceil((x.size * 48) / 128 / 16) * 16 + 48)));
    return q;
  };
  return {
    applies: (w, io) => w.type === GgmlType.Q8_0 && !io.glu && !io.norm && w.cols % 32 === 0 && io.xOffset % 4 === 0 && io.xStride % 4 === 0,
    bind(w, x, y, io) {
      const xq = copyOf(x);
      const group = quantize.bind(x, xq);
      const mm = kernelFor(w.bias !== undefined);
      const bound = w.shards.map((s) => ({ group: mm.bind(s.buffer, xq, y, w.bias), rowOffset: s.rowStart, n: s.rows }));
      const k = w.cols;
      return {
        encode(pass, arena, tokens) {
          quantize.encode(pass, arena, group, { tokens, k, xOffset: io.xOffset, xStride: io.xStride });
          for (const b of bound) {
            mm.encode(pass, arena, b.group, { t: tokens, n: b.n, k, xOffset: 0, xStride: q8RowVec4s(k), yOffset: io.yOffset, yStride: io.yStride, rowOffset: b.rowOffset, accumulate: io.accumulate });
          }
        },
      };
    },
  };
}
