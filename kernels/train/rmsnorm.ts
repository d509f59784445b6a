import forward from './rmsnorm-forward.wgsl?raw';
import backward from './rmsnorm-backward.wgsl?raw';
import workgroupSum from './workgroup-sum.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';

const WG = 64;

/** RMSNorm keeping 1/rms per row. Bindings: x (read), w (read), y (write), rstd (write). */
export class TrainRmsNormForward {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'train-rmsnorm-forward', code: wgsl(forward, workgroupSum), bindings: ['read', 'read', 'write', 'write'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; n: number; eps: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.n;
    arena.f32[s + 2] = p.eps;
    const [gx, gy] = grid2d(p.rows);
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}

/** dx (+)= RMSNorm's input gradient. Bindings: x, w, rstd, dy (read), dx (write). */
export class TrainRmsNormBackward {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'train-rmsnorm-backward', code: wgsl(backward, workgroupSum), bindings: ['read', 'read', 'read', 'read', 'write'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; n: number; accumulate: boolean }): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.n;
    arena.u32[s + 2] = p.accumulate ? 1 : 0;
    const [gx, gy] = grid2d(p.rows);
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
