import source from './rmsnorm.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import type { CompiledKernel, KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

/** RMSNorm of `rows` rows of length `dim`: buffers x (read), weight (read), y (write). */
export class RmsNormKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'rmsnorm', code: source, bindings: ['read', 'read', 'write'], constants: { WG: 64 } });
  }

  bind(x: GPUBuffer, weight: GPUBuffer, y: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([x, weight, y]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; dim: number; eps: number; xOffset?: number; yOffset?: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.dim;
    arena.f32[s + 2] = p.eps;
    arena.u32[s + 3] = p.xOffset ?? 0;
    arena.u32[s + 4] = p.yOffset ?? 0;
    const [gx, gy] = grid2d(p.rows);
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
