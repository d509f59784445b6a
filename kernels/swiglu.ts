import { activationWgsl, type Activation } from './activation.ts';
import source from './swiglu.wgsl?raw';
import sourceQ8 from './swiglu-q8.wgsl?raw';
import params from './swiglu-params.wgsl?raw';
import { q8RowVec4s, xqGroup, type XqMode, Q8_BLOCK_WGSL } from './quantize-x.ts';
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
  /** Elements between tokens in out (default n); with quantized output, vec4s (always q8RowVec4s(n)). */
  outStride?: number;
}

/**
 * act(gate) * up with act = silu (SwiGLU) or the tanh approximation of GELU (GeGLU).
 * Bindings: gate, up (read; may be the same fused buffer), out (write). With `output` 'q8', out holds
 * the rows quantized to int8 blocks of 32 (quantize-x.ts's layout, in mode `xq`) for the products that
 * read quantized x; n must be whole groups of that mode and the offsets and strides multiples of 4.
 */
export class SwiGluKernel {
  readonly kernel: CompiledKernel;
  constructor(
    ctx: KernelContext,
    readonly activation: Activation = 'silu',
    readonly output: 'f32' | 'q8' = 'f32',
    /** With quantized output: quantized for which weights' products (quantize-x.ts). */
    readonly xq: XqMode = 'q8_0',
  ) {
    const label = `${activation === 'gelu' ? 'geglu' : 'swiglu'}${output === 'q8' ? `-${xq}` : ''}`;
    const code = output === 'q8' ? wgsl(sourceQ8, params, activationWgsl(activation), Q8_BLOCK_WGSL) : wgsl(source, params, activationWgsl(activation));
    this.kernel = ctx.kernel({ label, code, bindings: ['read', 'read', 'write'], constants: output === 'q8' ? { WG, XQ_GROUP: xqGroup(xq) } : { WG } });
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
    if (this.output === 'q8') {
      const aligned = [p.gateOffset ?? 0, p.upOffset ?? 0, p.inStride ?? p.n].every((v) => v % 4 === 0);
      const group = xqGroup(this.xq);
      if (p.n % group !== 0 || !aligned) throw new Error(`${this.kernel.label}: n=${p.n} must be a multiple of ${group} and the gate/up offsets and stride of 4`);
    }
    arena.u32[s + 5] = this.output === 'q8' ? q8RowVec4s(p.n) : (p.outStride ?? p.n);
    const items = this.output === 'q8' ? p.tokens * (p.n / xqGroup(this.xq)) : p.tokens * p.n;
    const [gx, gy] = grid2d(Math.ceil(items / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
