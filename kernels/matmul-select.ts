/**
 * Choosing a weight-product kernel: matrix-vector kernels (one per row count) for decode, the tiled
 * kernel for prefill, each in the variant that suits the adapter (see matvec.ts, matmul.ts).
 */
import type { GgmlType } from '../ggml/types.ts';
import { MatMulKernel } from './matmul.ts';
import type { MatmulParams, ProductExtras, ProductOptions } from './matmul-params.ts';
import { MAX_MATVEC_T, MatVecKernel } from './matvec.ts';
import type { ParamArena } from './runtime/arena.ts';
import type { KernelContext } from './runtime/context.ts';
import type { WeightStore } from './runtime/weights.ts';

/**
 * On CPU rasterisers the tiled kernel (a register block of weight rows x 8 tokens per invocation) beats
 * the matrix-vector kernel from 4 rows of x, whatever the weight type. Batching curve on llvmpipe,
 * SmolLM2-135M Q8_0, aggregate decode tok/s at 2 / 3 / 4 / 8 sequences: matrix-vector up to 8 rows
 * 23.0 / 20.7 / 28.0 / 28.6; tiled from 4 rows 21.0 / 23.8 / 27.5 / 45.6; tiled from 2 rows 14.1 / 18.3 /
 * 25.5 / 46.8. A step's products replayed on llvmpipe, tiled against matrix-vector (time ratio at 4 / 6 / 8
 * rows): Llama-3.2-1B Q4_K_M 1.01 / 0.77 / 0.62 (at 2 and 3 rows 1.77 and 1.25: those stay matrix-vector),
 * SmolLM2 Q4_0 0.92 / 0.69 / 0.56, F16 1.02 / 0.71 / 0.56. On SwiftShader, whose tiled kernel is another
 * (16 tokens, x from a window), the crossing comes later (1B Q4_K_M 1.13 / 1.04 / 0.87, Q4_0 1.28 / 1.03 /
 * 0.82), but each matrix-vector row count is a pipeline SwiftShader compiles at load for seconds (a K-quant
 * one 1-13 s): one threshold keeps a Q4_K_M model's load to 7 of them rather than 18.
 */
export const CPU_MATVEC_UP_TO = 3;

/** Up to how many rows of x a product runs the matrix-vector kernel on this device; more go to the tiled one. */
export function matvecUpTo(ctx: KernelContext): number {
  return ctx.caps.software ? CPU_MATVEC_UP_TO : MAX_MATVEC_T;
}

/** The best kernel for `t` rows of x times a `type` weight on this device. */
export function selectMatmul(ctx: KernelContext, type: GgmlType, t: number, opts: ProductOptions = {}): MatVecKernel | MatMulKernel {
  return t <= matvecUpTo(ctx) ? new MatVecKernel(ctx, type, t, undefined, opts) : new MatMulKernel(ctx, type, undefined, opts);
}

/**
 * Every product with weights of one type (and bias or not): bind once, then each encode picks the kernel
 * for its `t`. All the kernels share one bind group layout (W, x, y[, bias]), so one bind group serves them all.
 */
export class WeightMatmul {
  private readonly kernels = new Map<number, MatVecKernel | MatMulKernel>();

  constructor(
    private readonly ctx: KernelContext,
    readonly type: GgmlType,
    private readonly opts: ProductOptions = {},
  ) {}

  /** Up to how many rows of x this product's dispatches can run its tail (ProductOptions.tail): 0 without one. */
  get tailUpTo(): number {
    return this.opts.tail ? matvecUpTo(this.ctx) : 0;
  }

  kernelFor(t: number): MatVecKernel | MatMulKernel {
    const key = t <= matvecUpTo(this.ctx) ? t : 0;
    if (key === 0 && this.opts.tail) throw new Error(`WeightMatmul: a product with a tail runs up to ${matvecUpTo(this.ctx)} rows of x, not ${t}`);
    let k = this.kernels.get(key);
    if (!k) {
      k = selectMatmul(this.ctx, this.type, t, this.opts);
      this.kernels.set(key, k);
    }
    return k;
  }

  /** Builds now, at load, the kernels products of n rows of k will run (MatVecKernel.prepare). */
  prepare(k: number, n: number): void {
    for (let t = 1; t <= matvecUpTo(this.ctx); t++) {
      const kernel = this.kernelFor(t);
      if (kernel instanceof MatVecKernel) kernel.prepare(k, n);
    }
  }

  /** W, x, y, and the bias, norm weight, next weights and tail buffers where the product was built with them. */
  bind(w: WeightStore, x: GPUBuffer | GPUBufferBinding, y: GPUBuffer | GPUBufferBinding, more: ProductExtras = {}): GPUBindGroup {
    const k = this.kernelFor(1);
    if (!(k instanceof MatVecKernel)) throw new Error('WeightMatmul: no matrix-vector kernel for one row');
    const group = k.bind(w, x, y, more);
    // Quantized x may be read through a uniform window by the tiled kernel (matmul-x-window.ts).
    if (this.opts.xq8 && !this.opts.tail) {
      const tiled = this.kernelFor(MAX_MATVEC_T + 1);
      if (tiled instanceof MatMulKernel) tiled.attach(group, w, x, y, more);
    }
    return group;
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: MatmulParams): void {
    const kernel = this.kernelFor(p.t);
    const rows = kernel instanceof MatVecKernel ? this.int8Rows(kernel, p) : p.t;
    if (rows >= p.t) {
      kernel.encode(pass, arena, group, p);
      return;
    }
    // Rows of x whose int8 staging would not fit workgroup memory together go in chunks that do, each
    // reading W again, rather than to the float kernel, whose gated form recomputes act(gate) * up over
    // all of k for every row of W: on the H200 the 1B's down product (k 8192) left int8 from 5 sequences,
    // and 8 sequences decoded slower than 4 (902 against 973 tok/s; unmeasured since).
    const xStride = p.xStride ?? p.k;
    const yStride = p.yStride ?? p.n;
    for (let t0 = 0; t0 < p.t; t0 += rows) {
      const t = Math.min(rows, p.t - t0);
      this.kernelFor(t).encode(pass, arena, group, { ...p, t, xOffset: (p.xOffset ?? 0) + t0 * xStride, xStride, yOffset: (p.yOffset ?? 0) + t0 * yStride, yStride });
    }
  }

  /** The most rows of x (up to p.t) one int8 dispatch of this product takes: p.t unless its x would not fit, and no fewer rows would either. */
  private int8Rows(kernel: MatVecKernel, p: MatmulParams): number {
    if (kernel.variant !== 'dp4a' || kernel.int8For(p.k, p.n)) return p.t;
    for (let t = p.t - 1; t >= 1; t--) {
      const smaller = this.kernelFor(t);
      if (smaller instanceof MatVecKernel && smaller.int8For(p.k, p.n)) return t;
    }
    return p.t;
  }
}
