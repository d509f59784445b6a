import pages from './attention-pages.wgsl?raw';
import source from './kv-mirror.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import { type CompiledKernel, type KernelContext, wgsl } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;
/** Words of one Run (kv-mirror.wgsl): slot, first mirror row, rows, padding. */
export const MIRROR_RUN_WORDS = 4;

export interface KvMirrorParams {
  pageSize: number;
  maxPages: number;
  /** Sequences (runs) of the step, and the most rows any of them mirrors. */
  runs: number;
  maxRows: number;
}

/**
 * The gather of a long step's KV rows into linear runs (kv-mirror.wgsl). Bindings: kCache, vCache, runs,
 * pageTable (read; binding 3 as attention's, so both find a row through attention-pages.wgsl); kOut, vOut (write).
 */
export class KvMirrorKernel {
  readonly kernel: CompiledKernel;

  /** `rowVec4s`: vec4s of one KV row (all KV heads of a position) in the cache's format. */
  constructor(
    ctx: KernelContext,
    readonly rowVec4s: number,
  ) {
    this.kernel = ctx.kernel({ label: `kv-mirror-r${rowVec4s}`, code: wgsl(source, pages), bindings: ['read', 'read', 'read', 'read', 'write', 'write'], constants: { WG, ROW_VEC4S: rowVec4s } });
  }

  bind(kCache: GPUBuffer, vCache: GPUBuffer, pageTable: GPUBuffer, runs: GPUBuffer, kOut: GPUBuffer, vOut: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([kCache, vCache, runs, pageTable, kOut, vOut]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: KvMirrorParams): void {
    if (p.runs < 1 || p.maxRows < 1) throw new Error(`kv-mirror: ${p.runs} runs of at most ${p.maxRows} rows`);
    const s = arena.slot();
    arena.u32[s] = p.pageSize;
    arena.u32[s + 1] = p.maxPages;
    const [gx, gy] = grid2d(Math.ceil(p.maxRows / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy, p.runs);
  }
}
