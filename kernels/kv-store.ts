import source from './kv-store.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import type { CompiledKernel, KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;

export interface KvStoreParams {
  tokens: number;
  kvDim: number;
  pageSize: number;
  /** Page-table entries per sequence. */
  maxPages: number;
  kOffset: number;
  vOffset: number;
  /** Elements between consecutive tokens' rows in the K/V source buffers. */
  srcStride: number;
}

/** Copies K and V rows of T tokens into the paged cache. Bindings: k, v, positions, tokenSeq, pageTable (read); kCache, vCache (write). */
export class KvStoreKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'kv-store', code: source, bindings: ['read', 'read', 'read', 'read', 'read', 'write', 'write'], constants: { WG } });
  }

  bind(k: GPUBuffer, v: GPUBuffer, positions: GPUBuffer, tokenSeq: GPUBuffer, pageTable: GPUBuffer, kCache: GPUBuffer, vCache: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([k, v, positions, tokenSeq, pageTable, kCache, vCache]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: KvStoreParams): void {
    const s = arena.slot();
    arena.u32[s] = p.tokens;
    arena.u32[s + 1] = p.kvDim;
    arena.u32[s + 2] = p.pageSize;
    arena.u32[s + 3] = p.maxPages;
    arena.u32[s + 4] = p.kOffset;
    arena.u32[s + 5] = p.vOffset;
    arena.u32[s + 6] = p.srcStride;
    const [gx, gy] = grid2d(Math.ceil((p.tokens * p.kvDim) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
