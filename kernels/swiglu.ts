import { activationWgsl, type Activation } from './activation.ts';
import source from './swiglu.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;

export interface SwiGluParams {
  tokens: number;
  /** Feed-forward width. */
  n: number;
  gateOffset?: number;
  upOffset?: number;
  /** Elements between tokens in gate/up (default n). */
  inStride?: number;
  outStride?: number;
}

/**
 * act(gate) * up with act = silu (SwiGLU) or the tanh approximation of GELU (GeGLU).
 * Bindings: gate, up (read; may be the same fused buffer), out (write).
 */
export class SwiGluKernel {
  readonly kernel: CompiledKernel;
  constructor(
    ctx: KernelContext,
    readonly activation: Activation = 'silu',
  ) {
    this.kernel = ctx.kernel({ label: activation === 'gelu' ? 'geglu' : 'swiglu', code: wgsl(source, activationWgsl(activation)), bindings: ['read', 'read', 'write'], constants: { WG } });
  }

  bind(gate: GPUBuffer, up: GPUBuffer, out: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([gate, up, out]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: SwiGluParams): void {
    const s = arena.slot();
    arena.u32[s] = p.tokens;
    arena.u32[s + 1] = p.n;
    arena.u32[s + 2] = p.gateOffset ?? 0;
    arena.u32[s + 3] = p.upOffset ?? 0;
    arena.u32[s + 4] = p.inStride ?? p.n;
    arena.u32[s + 5] = p.outStride ?? p.n;
    const [gx, gy] = grid2d(Math.ceil((p.tokens * p.n) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
