import source from './gather-rows.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';

const WG = 64;
/** An index that selects a row of zeros. */
export const NO_ROW = 0xffffffff;

/** Row gather with zero rows. Bindings: x (read), index (read u32), out (write). */
export class GatherRowsKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'train-gather-rows', code: source, bindings: ['read', 'read', 'write'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; dim: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.dim;
    const [gx, gy] = grid2d(Math.ceil((p.rows * p.dim) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
