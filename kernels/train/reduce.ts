import source from './reduce.wgsl?raw';
import workgroupSum from './workgroup-sum.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';

const WG = 64;
/** Partial sums the first pass may leave: the size of the `partials` buffer a caller binds. */
export const REDUCE_PARTIALS = 1024;

/**
 * Sum or sum of squares of a whole f32 buffer into one slot of another, in two dispatches.
 * Two bind groups: [x, partials] and [partials, out], where partials holds REDUCE_PARTIALS floats of scratch.
 */
export class ReduceKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'train-reduce', code: wgsl(source, workgroupSum), bindings: ['read', 'write'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, groups: [GPUBindGroup, GPUBindGroup], p: { n: number; squares: boolean; outIndex: number; accumulate: boolean }): void {
    const groupsNeeded = Math.min(REDUCE_PARTIALS, Math.max(1, Math.ceil(p.n / (WG * 16))));
    const perGroup = Math.ceil(p.n / groupsNeeded);
    const s1 = arena.slot();
    arena.u32.set([p.n, perGroup, 0, 0, p.squares ? 1 : 0], s1);
    arena.dispatch(pass, this.kernel, groups[0], s1, groupsNeeded);
    const s2 = arena.slot();
    arena.u32.set([groupsNeeded, groupsNeeded, p.outIndex, p.accumulate ? 1 : 0, 0], s2);
    arena.dispatch(pass, this.kernel, groups[1], s2, 1);
  }
}
