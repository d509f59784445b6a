import source from './add.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import type { CompiledKernel, KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;

/** x += y over n elements. Bindings: x (write), y (read). */
export class AddKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'add', code: source, bindings: ['write', 'read'], constants: { WG } });
  }

  bind(x: GPUBuffer, y: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([x, y]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { n: number; xOffset?: number; yOffset?: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.n;
    arena.u32[s + 1] = p.xOffset ?? 0;
    arena.u32[s + 2] = p.yOffset ?? 0;
    const [gx, gy] = grid2d(Math.ceil(p.n / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
