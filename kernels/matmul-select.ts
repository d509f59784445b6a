/**
 * Choosing a weight-product kernel: matrix-vector kernels (one per row count) for decode, the tiled
 * kernel for prefill, each in the variant that suits the adapter (see matvec.ts, matmul.ts).
 */
import type { GgmlType } from '../ggml/types.ts';
import { MatMulKernel } from './matmul.ts';
import type { MatmulParams, ProductOptions } from './matmul-params.ts';
import { MAX_MATVEC_T, MatVecKernel } from './matvec.ts';
import type { ParamArena } from './runtime/arena.ts';
import type { KernelContext } from './runtime/context.ts';

/** The best kernel for `t` rows of x times a `type` weight on this device. */
export function selectMatmul(ctx: KernelContext, type: GgmlType, t: number, opts: ProductOptions = {}): MatVecKernel | MatMulKernel {
  return t <= MAX_MATVEC_T ? new MatVecKernel(ctx, type, t, undefined, opts) : new MatMulKernel(ctx, type, undefined, opts);
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

  kernelFor(t: number): MatVecKernel | MatMulKernel {
    const key = t <= MAX_MATVEC_T ? t : 0;
    let k = this.kernels.get(key);
    if (!k) {
      k = selectMatmul(this.ctx, this.type, t, this.opts);
      this.kernels.set(key, k);
    }
    return k;
  }

  /** W, x, y, then the bias and the norm weight where the product was built with them. */
  bind(w: GPUBuffer | GPUBufferBinding, x: GPUBuffer | GPUBufferBinding, y: GPUBuffer | GPUBufferBinding, bias?: GPUBuffer | GPUBufferBinding, norm?: GPUBuffer | GPUBufferBinding): GPUBindGroup {
    if ((bias !== undefined) !== (this.opts.bias ?? false)) throw new Error(`WeightMatmul: ${this.opts.bias ? 'a bias buffer is required' : 'built without a bias'}`);
    if ((norm !== undefined) !== (this.opts.norm ?? false)) throw new Error(`WeightMatmul: ${this.opts.norm ? 'a norm weight is required' : 'built without a norm'}`);
    const k = this.kernelFor(1);
    if (!(k instanceof MatVecKernel)) throw new Error('WeightMatmul: no matrix-vector kernel for one row');
    return k.bind(w, x, y, bias, norm);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: MatmulParams): void {
    this.kernelFor(p.t).encode(pass, arena, group, p);
  }
}
