import source from './embedding.wgsl?raw';
import { typeName, type GgmlType } from '../ggml/types.ts';
import { deviceLayout } from './quant/layouts.ts';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';
import type { WeightStore } from './runtime/weights.ts';

export interface EmbeddingParams {
  /** Tokens to look up. */
  count: number;
  /** Elements per embedding row. */
  dim: number;
  /** Element offset of the first id in the ids buffer (default 0). */
  idsOffset?: number;
  /** Element offset of y[0, 0] (default 0). */
  yOffset?: number;
  /** Elements between rows of y (default dim). */
  yStride?: number;
  /** First table row in the bound shard (default 0). */
  rowBegin?: number;
  /** Table rows in the bound shard. */
  rows: number;
  /** Multiplier for every value (default 1). */
  scale?: number;
}

/**
 * y[i, :] = scale * W[ids[i], :] for a packed table of `type`. Bindings: W (read), ids (read, u32),
 * y (write). For a sharded table encode once per shard; each dispatch writes only its own ids' rows.
 */
export class EmbeddingKernel {
  readonly kernel: CompiledKernel;

  constructor(
    ctx: KernelContext,
    readonly type: GgmlType,
  ) {
    this.kernel = ctx.kernel({
      label: `embedding-${typeName(type)}`,
      code: wgsl(source, deviceLayout(ctx.caps, type).wgsl),
      bindings: ['weights', 'read', 'write'],
      constants: { WG: 64 },
    });
  }

  bind(w: WeightStore, ids: GPUBuffer | GPUBufferBinding, y: GPUBuffer | GPUBufferBinding): GPUBindGroup {
    return this.kernel.bind([w, ids, y]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: EmbeddingParams): void {
    const s = arena.slot();
    arena.u32[s] = p.count;
    arena.u32[s + 1] = p.dim;
    arena.u32[s + 2] = p.idsOffset ?? 0;
    arena.u32[s + 3] = p.yOffset ?? 0;
    arena.u32[s + 4] = p.yStride ?? p.dim;
    arena.u32[s + 5] = p.rowBegin ?? 0;
    arena.u32[s + 6] = p.rows;
    arena.f32[s + 7] = p.scale ?? 1;
    const [gx, gy] = grid2d(p.count);
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
