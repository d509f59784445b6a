import source from './embedding.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';

const WG = 64;

/** Row gather from an f32 table. Bindings: table (read), ids (read u32), x (write). */
export class TrainEmbeddingKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'train-embedding', code: source, bindings: ['read', 'read', 'write'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { tokens: number; dim: number; scale: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.tokens;
    arena.u32[s + 1] = p.dim;
    arena.f32[s + 2] = p.scale;
    const [gx, gy] = grid2d(Math.ceil((p.tokens * p.dim) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
