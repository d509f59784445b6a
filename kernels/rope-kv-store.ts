import angle from './rope-angle.wgsl?raw';
import pages from './attention-pages.wgsl?raw';
import ropeVec4 from './rope-vec4.wgsl?raw';
import source from './rope-kv-store.wgsl?raw';
import sourceVec4 from './rope-kv-store-vec4.wgsl?raw';
import io from './rope-kv-store-io.wgsl?raw';
import cacheF16 from './rope-kv-store-cache-f16.wgsl?raw';
import cacheF32 from './rope-kv-store-cache-f32.wgsl?raw';
import type { KvFormat } from './kv-format.ts';
import type { ParamArena } from './runtime/arena.ts';
import { writeRopeSettings, type RopeSettings } from './rope.ts';
import { wgsl, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;

/**
 * Whether heads of `headDim` with token rows `tokenStride` apart and `nRot` rotated dimensions are whole
 * vec4s of the vec4 kernel's layout (two pairs a vec4 in normal order, four in NeoX order); the QKV
 * product's RoPE tail reads the same layout (matvec-tail.ts).
 */
export function fitsVec4Rope(p: { headDim: number; tokenStride: number; nRot: number; neox: boolean }): boolean {
  return p.headDim % 4 === 0 && p.tokenStride % 4 === 0 && p.nRot % (p.neox ? 8 : 4) === 0;
}

export interface RopeKvStoreParams extends RopeSettings {
  tokens: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** Elements between consecutive tokens' Q|K|V rows. */
  tokenStride: number;
  pageSize: number;
  /** Page-table entries per sequence. */
  maxPages: number;
}

/**
 * RoPE on Q in place and on K into the paged cache, and V into the cache, from fused Q|K|V rows: what
 * RopeKernel then KvStoreKernel do, in one dispatch. Bindings: qkv (read-write), positions, tokenSeq,
 * pageTable, factors (read); kCache, vCache (write).
 */
export class RopeKvStoreKernel {
  readonly kernel: CompiledKernel;
  /** The vec4 kernel, where chosen (CPU rasterisers: see rope-kv-store-vec4.wgsl). */
  private readonly vec4: CompiledKernel | undefined;

  /**
   * `variant`: 'auto' takes the vec4 kernel on CPU adapters where the shapes allow; tests force either.
   * `kv`: the cache's format (kv-format.ts); 'f16' is written by the vec4 kernel only.
   */
  constructor(
    ctx: KernelContext,
    variant: 'auto' | 'scalar' | 'vec4' = 'auto',
    readonly kv: KvFormat = 'f32',
  ) {
    const bindings = ['write', 'read', 'read', 'read', 'read', 'write', 'write'] as const;
    this.kernel = ctx.kernel({ label: 'rope-kv-store', code: wgsl(io, pages, source, angle), bindings, constants: { WG } });
    if (kv === 'f16' && variant === 'scalar') throw new Error('rope-kv-store: an f16 KV cache is written by the vec4 kernel only');
    if (variant === 'vec4' || kv === 'f16' || (variant === 'auto' && ctx.caps.software)) {
      const label = `rope-kv-store-vec4${kv === 'f16' ? '-kv16' : ''}`;
      this.vec4 = ctx.kernel({ label, code: wgsl(io, pages, sourceVec4, kv === 'f16' ? cacheF16 : cacheF32, ropeVec4, angle), bindings, constants: { WG } });
    }
  }

  bind(qkv: GPUBuffer, positions: GPUBuffer, tokenSeq: GPUBuffer, pageTable: GPUBuffer, factors: GPUBuffer, kCache: GPUBuffer, vCache: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([qkv, positions, tokenSeq, pageTable, factors, kCache, vCache]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: RopeKvStoreParams): void {
    if (p.headDim % 2 !== 0 || p.nRot % 2 !== 0 || p.nRot > p.headDim) throw new Error(`rope-kv-store: head dim ${p.headDim} and rotated dims ${p.nRot} must be even, rotated ≤ head dim`);
    const s = arena.slot();
    arena.u32[s] = p.tokens;
    arena.u32[s + 1] = p.heads;
    arena.u32[s + 2] = p.kvHeads;
    arena.u32[s + 3] = p.headDim;
    writeRopeSettings(arena, s + 4, p);
    arena.u32[s + 9] = p.tokenStride;
    arena.u32[s + 10] = p.pageSize;
    arena.u32[s + 11] = p.maxPages;
    const byVec4 = this.vec4 && fitsVec4Rope(p);
    if (this.kv === 'f16' && !byVec4) throw new Error(`rope-kv-store: an f16 KV cache needs the vec4 kernel: head dim ${p.headDim}, token stride ${p.tokenStride} and rotated dims ${p.nRot} must be multiples of 4 (8 rotated in NeoX order)`);
    // Items per token: elements of every head and of V, two (scalar) or four (vec4) to an item.
    const perToken = byVec4 ? p.heads + 2 * p.kvHeads : ((p.heads + 2 * p.kvHeads) * p.headDim) / 2;
    const [gx, gy] = grid2d(Math.ceil((p.tokens * perToken) / WG));
    arena.dispatch(pass, byVec4 ? this.vec4! : this.kernel, group, s, gx, gy);
  }
}
