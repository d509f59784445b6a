/**
 * The seam between the model and the matrix kernels: a weight matrix as it sits on the GPU, and bound
 * products over it. The model never looks inside a shard; kernels/ decides layouts and variants.
 */
import type { GgmlType } from '../../ggml/types.ts';
import type { XqMode } from '../../kernels/quantize-x.ts';
import type { ParamArena } from '../../kernels/runtime/arena.ts';
import type { Activation } from '../../kernels/activation.ts';
import type { ProductTail, TailParams } from '../../kernels/matvec-tail.ts';
import type { WeightStore } from '../../kernels/runtime/weights.ts';

/** A 2-D GGUF weight: `rows` output rows of `cols` inputs, split into row shards that fit one binding. */
export interface WeightMatrix {
  name: string;
  type: GgmlType;
  rows: number;
  cols: number;
  shards: { store: WeightStore; rowStart: number; rows: number }[];
  bytes: number;
  /** One f32 per row, added to every product's output (qwen2's Q/K/V biases); stacked like the rows. */
  bias?: GPUBuffer;
}

/** Where a product reads x and writes y: row t of x starts at xOffset + t * xStride (elements), likewise y. */
export interface MatrixIo {
  xOffset: number;
  xStride: number;
  yOffset: number;
  yStride: number;
  /** y += W·x instead of y = W·x (fuses the residual add). */
  accumulate: boolean;
  /**
   * The input is act(gate) * up of a fused gate|up buffer, computed as it is read (an FFN's down
   * projection with its gated activation folded in); up sits `upOffset` elements after its gate. x
   * offset, stride and upOffset must be multiples of 4.
   */
  glu?: { activation: Activation; upOffset: number };
  /**
   * The input is RMSNorm(x) with this weight (one f32 per column) and epsilon, computed inside the
   * product: the norm before the QKV and gate|up products folded into them. Only for decode-sized
   * batches on GPU kernel variants (MatrixKernels.canFuseNorm).
   */
  norm?: { weight: GPUBuffer; eps: number };
  /**
   * x is rows quantized to int8 blocks of 32 (RmsNormKernel's 'q8' output or QuantizeXKernel's): x offset
   * and stride count vec4s (q8RowVec4s(cols) a row). Only where `quantizedX(w)` gives a mode.
   */
  xq8?: boolean;
  /**
   * The pass that follows the product, folded into its last invocation where the device's decode kernels
   * can (MatrixKernels.tails): `buffers` are its counters (tailCounterWords zeroed words, which the tails of
   * one step's products may share), the norm weight for 'norm-q8', and its int8 output; `params` where it
   * reads its input in y. A gated tail needs an unsharded product.
   */
  tail?: { tail: ProductTail; buffers: GPUBuffer[]; params: TailParams };
}

/** A product bound to its buffers once; `encode` records its dispatches for `tokens` rows of x. */
export interface BoundProduct {
  /** With `tail` set, runs io.tail too where this step's kernel can; returns whether it did. */
  encode(pass: GPUComputePassEncoder, arena: ParamArena, tokens: number, tail?: boolean): boolean;
}

export interface MatrixKernels {
  /**
   * GPU bytes of one row of `cols` elements of `type`, how many rows one shard (binding) may hold, how
   * many rows the layout keeps together (repack takes runs of rows that start at a multiple of it), and
   * the bytes a buffer of `n` rows needs (whole groups).
   */
  layout(type: GgmlType, rows: number, cols: number): { gpuRowBytes: number; shardRows: number; rowGroup: number; bufferBytes(n: number): number };
  /** Raw GGUF bytes of whole rows → the bytes the kernels read (still packed; whole groups of rows). */
  repack(type: GgmlType, raw: Uint8Array, rows: number, cols: number): Uint8Array;
  /** y[t, :] (+)= W · x[t, :] (+ w.bias) for t < tokens. */
  product(w: WeightMatrix, x: GPUBuffer, y: GPUBuffer, io: MatrixIo): BoundProduct;
  /**
   * How products of `w` read quantized x (`io.xq8`) here, or undefined where they read f32 x: on CPU
   * rasterisers, Q8_0 and Q4_0 in 'q8_0' mode, Q4_K and Q6_K in 'q8_K' (quantize-x.ts), when rows are
   * whole groups of that mode.
   */
  quantizedX(w: WeightMatrix): XqMode | undefined;
  /** Whether products may take `io.norm` here, and for at most how many rows of x. */
  readonly fuseNormUpTo: number;
  /**
   * Steps of at most this many tokens apply the FFN's gated activation inside the down product, as it
   * reads x; longer steps run it as its own pass. A product recomputes the activation for every block of
   * weight rows it computes, which a tiled prefill product on a CPU rasteriser pays many times over.
   */
  readonly fuseGluUpTo: number;
  /** Whether products here take io.tail (CPU rasterisers' decode kernels). */
  readonly tails: boolean;
  /** y[t, :] = scale × row ids[t] of W (embedding lookup), for t < tokens. */
  embedding(w: WeightMatrix, ids: GPUBuffer, y: GPUBuffer, scale?: number): BoundProduct;
}
