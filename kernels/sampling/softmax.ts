import source from './softmax.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';

/** Row-wise softmax(x / T). Bindings: x (read), y (write). */
export class SoftmaxKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'softmax', code: source, bindings: ['read', 'write'] });
  }

  bind(x: GPUBuffer, y: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([x, y]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; n: number; stride?: number; temperature?: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.n;
    arena.u32[s + 2] = p.stride ?? p.n;
    arena.f32[s + 3] = p.temperature ?? 1;
    arena.dispatch(pass, this.kernel, group, s, p.rows);
  }
}
