import source from './keep-rows.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import type { CompiledKernel, KernelContext } from './runtime/context.ts';

const WG = 64;

/**
 * Moves the sampled rows' tokens to rows 0..R-1 before the last layer's attention (keep-rows.wgsl says
 * why). Bindings: the step's sampled-row indices, QKV rows, residual stream, positions, slots (all written).
 */
export class KeepRowsKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'keep-rows', code: source, bindings: ['write', 'write', 'write', 'write', 'write'], constants: { WG } });
  }

  bind(keep: GPUBuffer, qkv: GPUBuffer, x: GPUBuffer, positions: GPUBuffer, slots: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([keep, qkv, x, positions, slots]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; qDim: number; qkvStride: number; dim: number }): void {
    const s = arena.slot();
    arena.u32.set([p.rows, p.qDim, p.qkvStride, p.dim], s);
    arena.dispatch(pass, this.kernel, group, s, 1, 1);
  }
}
