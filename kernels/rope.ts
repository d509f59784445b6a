import angle from './rope-angle.wgsl?raw';
import pair from './rope-pair.wgsl?raw';
import source from './rope.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;

/** How a model rotates: shared by RoPE in place and the fused RoPE + KV-store epilogue. */
export interface RopeSettings {
  /** Rotated dimensions per head (≤ headDim, even). */
  nRot: number;
  neox: boolean;
  freqBase: number;
  freqScale: number;
  /** Whether the bound `factors` buffer holds n_rot/2 frequency divisors. */
  useFactors: boolean;
}

/** The five RopeSettings words, in the order every RoPE kernel's Params declares them (rope, rope-kv-store, train/rope), from word `at`. */
export function writeRopeSettings(arena: Pick<ParamArena, 'u32' | 'f32'>, at: number, r: RopeSettings): void {
  arena.u32[at] = r.nRot;
  arena.u32[at + 1] = r.neox ? 1 : 0;
  arena.f32[at + 2] = r.freqBase;
  arena.f32[at + 3] = r.freqScale;
  arena.u32[at + 4] = r.useFactors ? 1 : 0;
}

export interface RopeParams extends RopeSettings {
  tokens: number;
  heads: number;
  headDim: number;
  xOffset?: number;
  /** Elements between consecutive tokens in x (default heads × headDim). */
  tokenStride?: number;
}

/** RoPE in place on x (read-write), using per-token positions (read) and optional frequency factors (read). */
export class RopeKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'rope', code: wgsl(source, angle, pair), bindings: ['write', 'read', 'read'], constants: { WG } });
  }

  bind(x: GPUBuffer, positions: GPUBuffer, factors: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([x, positions, factors]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: RopeParams): void {
    const s = arena.slot();
    arena.u32[s] = p.tokens;
    arena.u32[s + 1] = p.heads;
    arena.u32[s + 2] = p.headDim;
    writeRopeSettings(arena, s + 3, p);
    arena.u32[s + 8] = p.xOffset ?? 0;
    arena.u32[s + 9] = p.tokenStride ?? p.heads * p.headDim;
    const [gx, gy] = grid2d(Math.ceil((p.tokens * p.heads * (p.nRot / 2)) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
