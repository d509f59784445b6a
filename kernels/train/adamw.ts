import source from './adamw.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';

const WG = 64;

export interface AdamWParams {
  n: number;
  /** Where the reduction left the squared global gradient norm in `scalars`. */
  normIndex: number;
  lr: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
  /** The step being taken, from 1 (bias correction). */
  step: number;
  /** Global norm limit; 0 = no clipping. */
  clip: number;
}

/** AdamW update with clipping. Bindings: param (write), grad (read), m (write), v (write), scalars (read). */
export class AdamWKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'train-adamw', code: source, bindings: ['write', 'read', 'write', 'write', 'read'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: AdamWParams): void {
    const s = arena.slot();
    arena.u32[s] = p.n;
    arena.u32[s + 1] = p.normIndex;
    const f = arena.f32;
    f[s + 2] = p.lr;
    f[s + 3] = p.beta1;
    f[s + 4] = p.beta2;
    f[s + 5] = p.epsilon;
    f[s + 6] = p.weightDecay;
    f[s + 7] = 1 - Math.pow(p.beta1, p.step);
    f[s + 8] = 1 - Math.pow(p.beta2, p.step);
    f[s + 9] = p.clip;
    const [gx, gy] = grid2d(Math.ceil(p.n / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
