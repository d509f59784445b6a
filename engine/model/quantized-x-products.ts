/**
 * Q8_0, Q4_0, Q4_K and Q6_K products on CPU rasterisers whose x no earlier pass wrote quantized (the O
 * product's input, attention's output; and the plain products of layers an adapter adapts): a quantize
 * pass to int8 blocks, then the product over them. Every storage load there is a loop over the SIMD
 * lanes, and quantized x is three loads per token and block instead of eight (64-token prefill products
 * of SmolLM2-135M on llvmpipe 500 -> 375 ms). The arithmetic is llama.cpp's CPU backend's for these
 * weights (quantize-x.ts's modes), exact integer sums per block; so every product of such a model reads
 * x the way llama.cpp's do, in decode as in prefill (test/engine/architectures.test.ts).
 */
import { QuantizeXKernel, q8RowVec4s, type XqMode } from '../../kernels/quantize-x.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { memoize } from '../../kernels/runtime/memo.ts';
import { xq8Buffer } from '../../kernels/matmul-x-window.ts';
import type { BoundProduct, MatrixIo, WeightMatrix } from './matrix.ts';

export interface QuantizedXProducts {
  /** Whether `w` read through `io` can take quantized x. */
  applies(w: WeightMatrix, io: MatrixIo): boolean;
  /** The product with quantized x; `encode` records the quantize pass and the product. */
  bind(w: WeightMatrix, x: GPUBuffer, y: GPUBuffer, io: MatrixIo): BoundProduct;
}

/** `product(w, xq, y, io)`: the MatrixKernels product, here always over quantized x (io.xq8). */
export function createQuantizedXProducts(ctx: KernelContext, modeOf: (w: WeightMatrix) => XqMode | undefined, product: (w: WeightMatrix, x: GPUBuffer, y: GPUBuffer, io: MatrixIo) => BoundProduct): QuantizedXProducts | undefined {
  if (!ctx.caps.software) return undefined;
  const quantizer = memoize((mode: XqMode) => new QuantizeXKernel(ctx, mode));
  // One quantized copy per x buffer: products reading the same x in a step share its buffer, and each
  // quantizes it again just before it reads it (the step's passes run in order).
  // A row of k values takes ceil(k / 128) groups of 144 bytes (q8RowVec4s): at most 144 bytes per 32 f32
  // (128 bytes, k = 32); rows are whole blocks, at most as many as fit in x.
  const copyOf = memoize((x: GPUBuffer) => xq8Buffer(ctx, `${x.label}.q8`, Math.ceil((x.size * 144) / 128 / 16) * 16 + 144));
  return {
    applies: (w, io) => modeOf(w) !== undefined && !io.glu && !io.norm && io.xOffset % 4 === 0 && io.xStride % 4 === 0,
    bind(w, x, y, io) {
      const xq = copyOf(x);
      const quantize = quantizer(modeOf(w)!);
      const group = quantize.bind(x, xq);
      const k = w.cols;
      const over = product(w, xq, y, { ...io, xOffset: 0, xStride: q8RowVec4s(k), xq8: true });
      return {
        encode(pass, arena, tokens, tail) {
          quantize.encode(pass, arena, group, { tokens, k, xOffset: io.xOffset, xStride: io.xStride });
          return over.encode(pass, arena, tokens, tail);
        },
      };
    },
  };
}
