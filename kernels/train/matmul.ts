import source from './matmul.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';

/** op(A) is m × k, op(B) is k × n, C is m × n; leading dimensions are the stored row lengths. */
export interface TrainMatmulParams {
  m: number;
  n: number;
  k: number;
  transA: boolean;
  transB: boolean;
  lda: number;
  ldb: number;
  ldc: number;
  aOffset?: number;
  bOffset?: number;
  cOffset?: number;
  /** C += alpha · op(A) · op(B) instead of C = alpha · op(A) · op(B). */
  accumulate: boolean;
  alpha?: number;
}

const TILE = 32;

/**
 * f32 matrix product with optional transposes: one pipeline per transpose combination and load path
 * (vec4 where every offset and leading dimension allows). Bind through `kernel(...)` of any variant: their
 * bind group layouts are identical. Bindings: A (read), B (read), C (write; never A or B).
 */
export class TrainMatmulKernel {
  private readonly variants: CompiledKernel[];
  constructor(ctx: KernelContext) {
    this.variants = [0, 1, 2, 3, 4, 5, 6, 7].map((v) =>
      ctx.kernel({
        label: `train-matmul-${v & 1 ? 't' : 'n'}${v & 2 ? 't' : 'n'}${v & 4 ? '-vec4' : ''}`,
        code: source,
        bindings: ['read', 'read', 'write'],
        constants: { TRANS_A: v & 1, TRANS_B: (v >> 1) & 1, VEC4: (v >> 2) & 1 },
      }),
    );
  }

  /** The pipeline for a product (for bind groups; any variant's layout serves all of them). */
  kernel(transA: boolean, transB: boolean, vec4 = false): CompiledKernel {
    return this.variants[(transA ? 1 : 0) + (transB ? 2 : 0) + (vec4 ? 4 : 0)];
  }

  /** Whether a product's operands allow the vec4 load path. */
  static vec4(p: Pick<TrainMatmulParams, 'm' | 'n' | 'k' | 'transA' | 'transB' | 'lda' | 'ldb' | 'aOffset' | 'bOffset'>): boolean {
    const aligned = (...v: number[]) => v.every((x) => x % 4 === 0);
    return aligned(p.aOffset ?? 0, p.lda, p.transA ? p.m : p.k, p.bOffset ?? 0, p.ldb, p.transB ? p.k : p.n);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: TrainMatmulParams): void {
    if (p.m === 0 || p.n === 0) return;
    const s = arena.slot();
    const u = arena.u32;
    u[s] = p.m;
    u[s + 1] = p.n;
    u[s + 2] = p.k;
    u[s + 3] = p.transA ? 1 : 0;
    u[s + 4] = p.transB ? 1 : 0;
    u[s + 5] = p.lda;
    u[s + 6] = p.ldb;
    u[s + 7] = p.ldc;
    u[s + 8] = p.aOffset ?? 0;
    u[s + 9] = p.bOffset ?? 0;
    u[s + 10] = p.cOffset ?? 0;
    u[s + 11] = p.accumulate ? 1 : 0;
    arena.f32[s + 12] = p.alpha ?? 1;
    arena.dispatch(pass, this.kernel(p.transA, p.transB, TrainMatmulKernel.vec4(p)), group, s, Math.ceil(p.n / TILE), Math.ceil(p.m / TILE));
  }
}
