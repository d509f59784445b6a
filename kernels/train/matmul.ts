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

/** Invocations along n and m, row groups per invocation and the depth of a staged slice: a tile is 4·wy·mv × 4·wx of C. */
const SHAPES = {
  /** 64 × 32: each invocation 8 rows × 4 columns. */
  square: { wx: 8, wy: 8, mv: 2, tk: 32 },
  /** n ≤ 8: x·Aᵀ and dY·B, the adapter's rank-wide outputs (128 × 8). */
  tall: { wx: 2, wy: 32, mv: 1, tk: 16 },
  /** m ≤ 8: dA, rank rows (8 × 128). */
  wide: { wx: 32, wy: 2, mv: 1, tk: 16 },
} as const;
type Shape = keyof typeof SHAPES;
type Layout = Pick<TrainMatmulParams, 'm' | 'n' | 'k' | 'transA' | 'transB' | 'lda' | 'ldb' | 'aOffset' | 'bOffset'>;

/**
 * f32 matrix product with optional transposes: one pipeline per transpose combination, load path (vec4
 * where every offset and leading dimension allows) and tile shape, compiled on first use. Bind through
 * `kernel(params)`. Bindings: A (read), B (read), C (write; never A or B).
 */
export class TrainMatmulKernel {
  private readonly variants = new Map<string, CompiledKernel>();
  constructor(private readonly ctx: KernelContext) {}

  /** The pipeline a product runs on (for its bind group). */
  kernel(p: Layout): CompiledKernel {
    const vec4 = TrainMatmulKernel.vec4(p);
    const shape = TrainMatmulKernel.shape(p);
    const key = `${p.transA ? 't' : 'n'}${p.transB ? 't' : 'n'}${vec4 ? '-vec4' : ''}-${shape}`;
    let k = this.variants.get(key);
    if (!k) {
      const s = SHAPES[shape];
      k = this.ctx.kernel({
        label: `train-matmul-${key}`,
        code: source,
        bindings: ['read', 'read', 'write'],
        constants: { TRANS_A: p.transA ? 1 : 0, TRANS_B: p.transB ? 1 : 0, VEC4: vec4 ? 1 : 0, WX: s.wx, WY: s.wy, MV: s.mv, TK: s.tk },
      });
      this.variants.set(key, k);
    }
    return k;
  }

  /** Whether a product's operands allow the vec4 load path. */
  static vec4(p: Layout): boolean {
    const aligned = (...v: number[]) => v.every((x) => x % 4 === 0);
    return aligned(p.aOffset ?? 0, p.lda, p.transA ? p.m : p.k, p.bOffset ?? 0, p.ldb, p.transB ? p.k : p.n);
  }

  static shape(p: { m: number; n: number }): Shape {
    if (p.n <= 8 && p.m > 8) return 'tall';
    if (p.m <= 8 && p.n > 8) return 'wide';
    return 'square';
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
    const shape = SHAPES[TrainMatmulKernel.shape(p)];
    arena.dispatch(pass, this.kernel(p), group, s, Math.ceil(p.n / (4 * shape.wx)), Math.ceil(p.m / (4 * shape.wy * shape.mv)));
  }
}
