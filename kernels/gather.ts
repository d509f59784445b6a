import source from './gather.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import type { CompiledKernel, KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;

/** y[i] = x[idx[i]] for rows of length dim. Bindings: x, idx (read), y (write). */
export class GatherKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'gather', code: source, bindings: ['read', 'read', 'write'], constants: { WG } });
  }

  bind(x: GPUBuffer, idx: GPUBuffer, y: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([x, idx, y]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; dim: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.dim;
    const [gx, gy] = grid2d(Math.ceil((p.rows * p.dim) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
