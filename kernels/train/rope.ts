import angle from '../rope-angle.wgsl?raw';
import pair from '../rope-pair.wgsl?raw';
import { writeRopeSettings, type RopeSettings } from '../rope.ts';
import source from './rope.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';

const WG = 64;

export interface TrainRopeParams extends RopeSettings {
  tokens: number;
  heads: number;
  headDim: number;
  /** +1 rotates (forward), −1 rotates back (the gradient). */
  direction: 1 | -1;
}

/** RoPE in place on densely packed rows. Bindings: x (write), positions (read), factors (read). */
export class TrainRopeKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'train-rope', code: wgsl(source, angle, pair), bindings: ['write', 'read', 'read'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: TrainRopeParams): void {
    const s = arena.slot();
    const u = arena.u32;
    u[s] = p.tokens;
    u[s + 1] = p.heads;
    u[s + 2] = p.headDim;
    writeRopeSettings(arena, s + 3, p);
    arena.f32[s + 8] = p.direction;
    const [gx, gy] = grid2d(Math.ceil((p.tokens * p.heads * (p.nRot / 2)) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
