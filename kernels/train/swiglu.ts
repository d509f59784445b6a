import forward from './swiglu-forward.wgsl?raw';
import backward from './swiglu-backward.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';

const WG = 64;

/**
 * SwiGLU and its gradients, elementwise over `count` values.
 *   forward:  gate, up (read), h (write)
 *   backward: gate, up, dh (read), dgate, dup (write)
 */
export class TrainSwiGluKernels {
  readonly forward: CompiledKernel;
  readonly backward: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.forward = ctx.kernel({ label: 'train-swiglu-forward', code: forward, bindings: ['read', 'read', 'write'], constants: { WG } });
    this.backward = ctx.kernel({ label: 'train-swiglu-backward', code: backward, bindings: ['read', 'read', 'read', 'write', 'write'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, which: 'forward' | 'backward', group: GPUBindGroup, count: number): void {
    const s = arena.slot();
    arena.u32[s] = count;
    const [gx, gy] = grid2d(Math.ceil(count / WG));
    arena.dispatch(pass, this[which], group, s, gx, gy);
  }
}
