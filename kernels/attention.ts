import source from './attention.wgsl?raw';
import io from './attention-io.wgsl?raw';
import ioF32 from './attention-io-f32.wgsl?raw';
import ioVec4 from './attention-io-vec4.wgsl?raw';
import halves from './attention-halves.wgsl?raw';
import kvF16 from './attention-kv-f16.wgsl?raw';
import kvF32 from './attention-kv-f32.wgsl?raw';
import mirrorRows from './attention-mirror.wgsl?raw';
import pages from './attention-pages.wgsl?raw';
import type { KvFormat } from './kv-format.ts';
import outF32 from './attention-out-f32.wgsl?raw';
import outQ8 from './attention-out-q8.wgsl?raw';
import parallel from './attention-parallel.wgsl?raw';
import tiledSource from './attention-tiled.wgsl?raw';
import parallelPlain from './attention-parallel-plain.wgsl?raw';
import parallelRope from './attention-parallel-rope.wgsl?raw';
import parallelOut from './attention-parallel-out.wgsl?raw';
import parallelPartial from './attention-parallel-partial.wgsl?raw';
import combine from './attention-combine.wgsl?raw';
import angle from './rope-angle.wgsl?raw';
import { writeRopeSettings, type RopeSettings } from './rope.ts';
import serial from './attention-serial.wgsl?raw';
import serialGrouped from './attention-serial-grouped.wgsl?raw';
import serialWalk from './attention-serial-walk.wgsl?raw';
import serialSplit from './attention-serial-split.wgsl?raw';
import serialPair from './attention-serial-pair.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import type { GpuCaps } from './runtime/caps.ts';
import { type BindingKind, type CompiledKernel, type KernelContext, type KernelSpec, wgsl } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';
import { texelsWgsl } from './runtime/weights.ts';
import { q8RowVec4s, Q8_BLOCK_WGSL } from './quantize-x.ts';
import { unrollLines, unrollRowsTokens } from './unroll.ts';

export const ATTENTION_MAX_HEAD_DIM = 256;
const SERIAL_WG = 8;
/** Invocations a workgroup of the GPU kernel for heads of whole vec4s (attention-parallel.wgsl). */
const PARALLEL_WG = 256;
/**
 * Split positions (AttentionParams.splits): the most workgroups a decode step's attention is spread over
 * (a couple per core of a large GPU; the partial sums' buffer holds this many splits), the fewest
 * positions a split takes, and the most splits of one (token, head) pair (attention-combine.wgsl walks
 * them all in each invocation). Below SPLIT_LONG_SPAN positions a split into fewer than
 * SPLIT_FEWEST_SHORT parts is not worth its combine pass. Measured on an H200 (bench/results/README.md,
 * session 16): decode attention alone, per layer, at 2048 positions 47.8 us whole, 24.7-25.1 us in 4-8
 * splits (Llama-3.2-1B's 32 heads, one token), at 8192 173 -> 48 us; 16-28 splits of SmolLM2-135M's 9
 * heads were slower than 8-16. At 512 positions with the cache in L2 splitting lost (18.7 -> 20.6-23.6
 * us), but in the decode loop, where the products' weights push K and V out of L2, 8 splits took the
 * 1B's step from 2.55 to 2.28 ms; 2 splits of four sequences' 128 pairs lost in the loop (782 -> 633 tok/s).
 */
export const SPLIT_WORKGROUPS = 256;
const SPLIT_MIN_POSITIONS = 64;
const MAX_SPLITS = 16;
const SPLIT_LONG_SPAN = 2048;
const SPLIT_FEWEST_SHORT = 4;
const COMBINE_WG = 64;
/**
 * CPU rasterisers' split attention (attention-serial-split.wgsl): the most splits of a pair, the fewest
 * positions a split walks, the invocations a split step aims for, and the span it starts at. Each split
 * adds HV + 1 vec4 loads to its pair's merge, which one invocation runs: SmolLM2-135M decode after a
 * 500-token prompt (3 grouped invocations unsplit), one process alternating with unsplit attention: 16
 * splits 1.22-1.35x tok/s, 32 splits 1.15-1.29x, 8 splits 1.16-1.25x; at 100-124 positions and below
 * within noise, at 200 1.02-1.10x.
 */
export const MAX_SERIAL_SPLITS = 32;
const SERIAL_SPLIT_MIN_POSITIONS = 16;
const SERIAL_SPLIT_ITEMS = 48;
export const SERIAL_SPLIT_FROM = 128;
/** Invocations a workgroup of the prefill kernel (attention-tiled.wgsl), and the most query rows (tokens x query heads) it takes. */
const TILED_WG = 128;
const TILED_MAX_ROWS = 64;

/**
 * The prefill kernel's tile (attention-tiled.wgsl) for heads of `headDim` and `group` query heads a KV
 * head: BQ tokens (a power of two, BQ x GQ rows at most TILED_MAX_ROWS), TPR invocations a row (a power
 * of two dividing the head's vec4s), BK positions a round (K and V heads of BK positions and the rows'
 * scores within 16 KiB of workgroup memory); undefined where it does not apply (a head of an odd number
 * of vec4s or of more than 32, a group over TILED_MAX_ROWS).
 */
export function tiledShape(headDim: number, group: number): { BQ: number; GQ: number; BK: number; TPR: number } | undefined {
  const hv = headDim / 4;
  if (headDim % 8 !== 0 || hv > 32 || group < 1 || group > TILED_MAX_ROWS) return undefined;
  let bq = 1;
  while (bq * 2 * group <= TILED_MAX_ROWS) bq *= 2;
  const rows = bq * group;
  let tpr = 1;
  while (tpr * 2 * rows <= TILED_WG && hv % (tpr * 2) === 0) tpr *= 2;
  let bk = 16;
  while (bk > 1 && 2 * bk * hv * 16 + rows * bk * 4 + 16 > 16384) bk /= 2;
  return { BQ: bq, GQ: group, BK: bk, TPR: tpr };
}

/** Workgroups of the prefill kernel for a step of `tokens` (tiles of BQ tokens x KV heads); 0 where tiledShape does not apply. */
export function tiledWorkgroups(tokens: number, headDim: number, heads: number, kvHeads: number): number {
  const shape = tiledShape(headDim, heads / kvHeads);
  return shape ? Math.ceil(tokens / shape.BQ) * kvHeads : 0;
}
const COMBINE_BINDINGS: readonly BindingKind[] = ['read', 'write'];
/**
 * Most vec4s of one head's query and accumulator (head_dim / 4 each) an invocation of the grouped kernel
 * keeps for all its heads together: llvmpipe compiled 3 heads of dimension 64 (48) in under a second, 4
 * (64) in 5 s and 3 of dimension 128 (96) in 9 s, its register allocator fighting the spills.
 */
const GROUPED_MAX_VECS = 48;
/**
 * The same for the pair kernel's two tokens (attention-serial-pair.wgsl): SmolLM2-135M's 3 heads of 64
 * twice (96) compiled in about 0.35 s on llvmpipe. A 72-token step after 328 positions, its attention
 * replayed (30 layers, one process alternating): SmolLM2-135M (3 heads of 64 an invocation) 0.87-0.89x
 * the time of one token an invocation, Llama-3.2-1B (2 heads) 0.75x.
 */
const PAIRED_MAX_VECS = 96;

/** Query heads an invocation of the grouped kernel computes: the largest divisor of the group that fits. */
export function groupedHeads(heads: number, kvHeads: number, headDim: number): number {
  const group = heads / kvHeads;
  let best = 1;
  for (let g = 1; g <= group; g++) if (group % g === 0 && (g * headDim) / 4 <= GROUPED_MAX_VECS) best = g;
  return best;
}
const BINDINGS = ['read', 'read', 'read', 'read', 'read', 'read', 'write'] as const;
/** A serial vec4 kernel's template with attention-serial-walk.wgsl where it says `// walk`. */
function withWalk(template: string): string {
  const lines = serialWalk.split('\n');
  const marker = (name: string) => lines.findIndex((l) => l.trim() === `// walk: ${name}`);
  const part = (from: number, to: number) => lines.slice(from + 1, to).filter((l) => !l.startsWith('//')).join('\n');
  const queries = part(marker('queries'), marker('positions'));
  const positions = part(marker('positions'), lines.length);
  const code = template.includes('  // walk\n')
    ? template.replace('  // walk\n', `${queries}\n${positions}\n`)
    : template.replace('  // walk: queries\n', `${queries}\n`).replace('    // walk: positions\n', `${positions}\n`);
  if (code.split('\n').some((l) => /^\s*\/\/ walk(:|$)/.test(l))) throw new Error('attention: a serial vec4 template has a `// walk` line left');
  if (code === template) throw new Error('attention: a serial vec4 template has no `// walk` line');
  return code;
}
/** The serial split kernel's: BINDINGS, then the partial sums and the pairs' counters (attention-serial-split.wgsl). */
const SERIAL_SPLIT_BINDINGS: readonly BindingKind[] = [...BINDINGS, 'write', 'write'];
/** The kernel that rotates as it attends (attention-parallel-rope.wgsl): the cache written, RoPE's factors last. */
const ROPE_BINDINGS: readonly BindingKind[] = ['read', 'write', 'write', 'read', 'read', 'read', 'write', 'read'];
/** attention-kv-f32.wgsl with the cache bound read-write, for the kernel that stores its token's K and V. */
const KV_F32_WRITABLE = (() => {
  const code = kvF32.replace('var<storage, read> k_cache', 'var<storage, read_write> k_cache').replace('var<storage, read> v_cache', 'var<storage, read_write> v_cache');
  if (!code.includes('read_write> k_cache') || !code.includes('read_write> v_cache')) throw new Error('attention: attention-kv-f32.wgsl no longer declares k_cache and v_cache as read-only storage');
  return code;
})();
/** Where K and V come from a long step's mirror (attention-mirror.wgsl): textures, and each slot's first row. */
const MIRROR_BINDINGS: readonly BindingKind[] = ['read', 'texture', 'texture', 'read', 'read', 'read', 'write'];
/** The mirror's K and V textures as the mirror kernels read them (attention-mirror.wgsl's k_ld, v_ld). */
const MIRROR_TEXTURES = texelsWgsl('k_tex', 1, 'k_ld') + texelsWgsl('v_tex', 2, 'v_ld');

/**
 * The most positions a sequence may hold for the attention kernels on this adapter. A serial kernel walks
 * all of a token's positions in one invocation, and on llvmpipe every loop iteration of an invocation
 * counts against GpuCaps.loopBudget (runtime/loop-budget.ts): one a position for heads of whole vec4s (the
 * head's lines are written out), 2 · (headDim + 1) + 1 for the scalar kernel, whose two loops over the
 * head count too (a loop's last, exiting pass counts as well). The rest of an invocation (its head's loads
 * and stores) is bounded by 4 · headDim + 64.
 */
export function attentionPositionLimit(caps: GpuCaps, headDim: number): number {
  if (!caps.software || !Number.isFinite(caps.loopBudget)) return Infinity;
  const perPosition = headDim % 4 === 0 ? 1 : 2 * headDim + 3;
  return Math.floor((caps.loopBudget - 4 * headDim - 64) / perPosition);
}

export interface AttentionParams {
  tokens: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  pageSize: number;
  maxPages: number;
  /**
   * Workgroups each (token, head) pair's positions are split over (flash-decoding; splitsFor chooses):
   * above 1 the kernel writes partial sums into the buffer bound as its output (bind a buffer of
   * partialsBytes(headDim) there) and a combine pass, bound by bindCombine and given to encode, merges
   * them into the output. GPU kernel for heads of whole vec4s, f32 output.
   */
  splits?: number;
  /** Softmax scale, usually 1/sqrt(headDim). */
  scale: number;
  /** Sliding-window size in positions; 0 = full causal prefix. */
  window?: number;
  qOffset?: number;
  qStride?: number;
  outOffset?: number;
  outStride?: number;
  softcap?: number;
  /**
   * Walk the step in tiles of consecutive tokens, K and V of each position staged once for a tile's
   * tokens and query heads (attention-tiled.wgsl): for steps holding many tokens of each sequence
   * (prefill). GPU kernels for heads of whole vec4s where tiledShape applies, f32 output, no split, no
   * rotation; elsewhere ignored.
   */
  tiled?: boolean;
  /**
   * Serial kernels (CPU rasterisers): two consecutive tokens an invocation (attention-serial-pair.wgsl),
   * each K and V load shared by both tokens' query heads, where the step's tokens run mostly in one
   * sequence each (prefill); a pair that straddles two sequences walks each in turn. Elsewhere ignored.
   */
  tokenPairs?: boolean;
  /**
   * Rotate the query and the token's K head by RoPE and store its K and V into the cache as the kernel
   * attends (bindRope, attention-parallel-rope.wgsl), instead of a RoPE/KV-store pass before it. Every
   * token of the dispatch must be its sequence's only new position (a decode step); the GPU kernel for
   * heads of whole vec4s over an f32 cache only (rotates()).
   */
  rope?: RopeSettings;
  /**
   * 'q8_0': the output as the O product's quantized x (quantize-x.ts, 32-value blocks; outOffset and
   * outStride then count vec4s, outStride defaulting to a row of heads * headDim values); serial vec4
   * kernels only, head dimensions that are multiples of 32.
   */
  output?: 'f32' | 'q8_0';
  /**
   * 'mirror': K and V from a long step's mirror (bindMirror; engine/kv/kv-mirror.ts) instead of the paged
   * cache; serial vec4 kernels over an f16 cache only.
   */
  kvSource?: 'pages' | 'mirror';
}

/**
 * The WGSL of a serial vec4 kernel (AttentionKernel's, for CPU rasterisers) computing `group` query heads
 * an invocation (1: one head) writing `output`, reading K and V in format `kv` from the paged cache or from
 * a long step's mirror; with `split`, each pair's positions split over invocations
 * (attention-serial-split.wgsl, the paged cache only); with `tokens` 2, two tokens an invocation
 * (attention-serial-pair.wgsl). Its WG (invocations a workgroup) is the caller's: AttentionKernel's, or a
 * chain's (kernels/qkv-chain.ts), which runs the kernel's work as a phase of one dispatch.
 */
export function serialVec4Spec(kvFormat: KvFormat, headDim: number, output: 'f32' | 'q8_0', group = 1, kvSource: 'pages' | 'mirror' = 'pages', split = false, tokens: 1 | 2 = 1): KernelSpec & { constants: Record<string, number> } {
  const hv = headDim / 4;
  const constants = { HV: hv, ...(output === 'q8_0' ? { XQ_GROUP: 32 } : {}) };
  // A head's pairs written out, not looped: llvmpipe left a loop over the f16 cache's pairs rolled (its
  // body grew with the unpacking), and a rolled loop keeps the head's arrays in memory, 3x slower.
  // Pairs first, then query heads, so each pair's load is followed by every head's use of it.
  // One template for every group size (one head an invocation is a group of one), its walk over the
  // positions shared with the split kernel.
  const template = withWalk(split ? serialSplit : tokens === 2 ? serialPair : serialGrouped);
  const pairs = unrollLines(unrollLines(template, '$p', Math.floor(hv / 2)), '$q', hv % 2);
  // The walk's mask of each token's positions, only where an invocation takes two tokens.
  const masked = unrollLines(unrollLines(pairs, '$s', tokens === 1 ? 1 : 0), '$m', tokens === 2 ? 1 : 0);
  const body = unrollRowsTokens(masked, group, tokens);
  const mirror = kvSource === 'mirror';
  const shape = split ? `split-d${headDim}-g${group}` : tokens === 2 ? `pair-d${headDim}-g${group}` : group > 1 ? `grouped-d${headDim}-g${group}` : `vec4-d${headDim}`;
  const label = `attention-serial-${shape}${output === 'q8_0' ? '-q8' : ''}${kvFormat === 'f16' ? '-kv16' : ''}${mirror ? '-mirror' : ''}`;
  const out = output === 'q8_0' ? wgsl(outQ8, Q8_BLOCK_WGSL) : outF32;
  const kv = mirror ? wgsl(halves, MIRROR_TEXTURES, mirrorRows) : kvFormat === 'f16' ? wgsl(halves, kvF16, pages) : wgsl(kvF32, pages);
  const bindings = mirror ? MIRROR_BINDINGS : split ? SERIAL_SPLIT_BINDINGS : BINDINGS;
  return { label, code: wgsl(io, ioVec4, kv, out, body), bindings, constants };
}

/** The Params struct of `p` at word `s` of `u` (and its f32 view `f`). */
export function writeAttentionParams(u: Uint32Array, f: Float32Array, s: number, p: AttentionParams): void {
  u[s] = p.tokens;
  u[s + 1] = p.heads;
  u[s + 2] = p.kvHeads;
  u[s + 3] = p.headDim;
  u[s + 4] = p.pageSize;
  u[s + 5] = p.maxPages;
  f[s + 6] = p.scale;
  u[s + 7] = p.window ?? 0;
  u[s + 8] = p.qOffset ?? 0;
  u[s + 9] = p.qStride ?? p.heads * p.headDim;
  u[s + 10] = p.outOffset ?? 0;
  u[s + 11] = p.outStride ?? (p.output === 'q8_0' ? q8RowVec4s(p.heads * p.headDim) : p.heads * p.headDim);
  f[s + 12] = p.softcap ?? 0;
  if (p.rope) writeRopeSettings({ u32: u, f32: f }, s + 13, p.rope);
  u[s + 18] = p.splits ?? 1;
}

/**
 * Paged causal GQA attention. Bindings: q, kCache, vCache, pageTable, positions, tokenSeq (read); out (write).
 * Each token attends to its own sequence's positions 0..pos (tokenSeq picks the page-table row).
 */
export class AttentionKernel {
  readonly kernel: CompiledKernel;
  /**
   * One invocation per (token, head) without barriers, for CPU adapters; else a workgroup per pair
   * (attention-parallel.wgsl for heads of whole vec4s, attention.wgsl for the rest).
   */
  readonly serial: boolean;
  /**
   * The serial kernels reading vec4s, for head dimensions, offsets and strides that are multiples of 4: one
   * pipeline per head dimension, query heads computed together (attention-serial-grouped.wgsl) and output.
   */
  private readonly serialVec4 = new Map<string, CompiledKernel>();
  /** The GPU kernels for heads of whole vec4s and their combine pass, by head dimension and variant. */
  private readonly parallel = new Map<string, CompiledKernel>();
  private readonly ctx: KernelContext;
  /**
   * `minGroupedItems` (serial only): the fewest invocations for which query heads sharing a KV head
   * are computed together (below it, one invocation per query head keeps both of a small CPU's threads
   * busy in single-sequence decode); tests set it to force either kernel.
   */
  constructor(
    ctx: KernelContext,
    variant: 'serial' | 'workgroup' = ctx.caps.software ? 'serial' : 'workgroup',
    private readonly minGroupedItems = SERIAL_WG,
    /** The KV cache's format (kv-format.ts): 'f16' is read by the serial vec4 kernels only. */
    readonly kv: KvFormat = 'f32',
  ) {
    if (kv === 'f16' && variant !== 'serial') throw new Error('attention: an f16 KV cache is read by the serial (CPU) kernels only');
    this.serial = variant === 'serial';
    this.kernel = this.serial
      ? ctx.kernel({ label: 'attention-serial', code: wgsl(io, ioF32, pages, serial), bindings: BINDINGS, constants: { WG: SERIAL_WG } })
      : ctx.kernel({ label: 'attention', code: wgsl(io, ioF32, pages, source), bindings: BINDINGS });
    this.ctx = ctx;
  }

  /**
   * Invocations a workgroup: SERIAL_WG for one head an invocation (a decode token's few heads then span
   * both of a small CPU's threads); grouped and pair kernels (more than one head or token an
   * invocation), which run only with many items, fill one SIMD instruction of a wider CPU rasteriser
   * (GpuCaps.cpuLanes).
   */
  private wgFor(headsAndTokens: number): number {
    return headsAndTokens > 1 ? Math.max(SERIAL_WG, this.ctx.caps.cpuLanes) : SERIAL_WG;
  }

  /**
   * A serial vec4 kernel computing `group` query heads an invocation (1: one head) writing `output`,
   * reading K and V from the paged cache or from a long step's mirror; with `split`, each pair's positions
   * split over invocations (attention-serial-split.wgsl, the paged cache only); with `tokens` 2, two
   * tokens an invocation (attention-serial-pair.wgsl).
   */
  private vec4Kernel(headDim: number, output: 'f32' | 'q8_0', group = 1, kvSource: 'pages' | 'mirror' = 'pages', split = false, tokens: 1 | 2 = 1): CompiledKernel {
    const key = `${headDim}/${group}/${output}/${kvSource}/${split}/${tokens}`;
    let k = this.serialVec4.get(key);
    if (!k) {
      const spec = serialVec4Spec(this.kv, headDim, output, group, kvSource, split, tokens);
      this.serialVec4.set(key, (k = this.ctx.kernel({ ...spec, constants: { ...spec.constants, WG: this.wgFor(group * tokens) } })));
    }
    return k;
  }

  /**
   * Splits of each (token, head) pair's positions for a serial step of `tokens` whose longest span is
   * `span` positions (AttentionParams.splits on CPU rasterisers, attention-serial-split.wgsl): 1 where the
   * adapter's atomics do not order stores, heads are not whole vec4 pairs, or the span is under `minSpan`; else
   * enough for SERIAL_SPLIT_ITEMS invocations, each walking at least SERIAL_SPLIT_MIN_POSITIONS.
   */
  serialSplitsFor(tokens: number, heads: number, kvHeads: number, headDim: number, span: number, minSpan = SERIAL_SPLIT_FROM): number {
    if (!this.serialSplits(headDim) || span < minSpan) return 1;
    const items = (tokens * heads) / groupedHeads(heads, kvHeads, headDim);
    const splits = Math.min(MAX_SERIAL_SPLITS, Math.floor(span / SERIAL_SPLIT_MIN_POSITIONS), Math.round(SERIAL_SPLIT_ITEMS / items));
    return Math.max(1, splits);
  }

  /** Whether this adapter's serial kernels can split positions for heads of `headDim` (serialSplitsFor). */
  serialSplits(headDim: number): boolean {
    return this.serial && this.ctx.caps.orderedAtomics && headDim % 8 === 0;
  }

  /** Bytes of the serial split kernel's partial sums for steps of up to `tokens` tokens of `heads` heads. */
  static serialPartialsBytes(tokens: number, heads: number, headDim: number): number {
    return tokens * heads * MAX_SERIAL_SPLITS * (headDim / 4 + 1) * 16;
  }

  /**
   * Bindings for serial split steps (serialSplitsFor > 1): `bind`'s, then the partial sums
   * (serialPartialsBytes for at least the steps' tokens: the kernel writes them unchecked, with the
   * adapter's robustness off) and a zeroed counter a (token, head) pair (they are left zeroed).
   */
  bindSerialSplit(q: GPUBuffer, kCache: GPUBuffer, vCache: GPUBuffer, pageTable: GPUBuffer, positions: GPUBuffer, tokenSeq: GPUBuffer, out: GPUBuffer, partials: GPUBuffer, counters: GPUBuffer): GPUBindGroup {
    return this.ctx.bindGroup(SERIAL_SPLIT_BINDINGS, [q, kCache, vCache, pageTable, positions, tokenSeq, out, partials, counters], 'attention-serial-split');
  }

  /**
   * attention-parallel.wgsl for heads of `headDim` (a multiple of 4), rotating as it attends where `rope`,
   * writing partial sums where `split`.
   */
  private parallelKernel(headDim: number, rope = false, split = false): CompiledKernel {
    const key = `${headDim}/${rope}/${split}`;
    let k = this.parallel.get(key);
    if (!k) {
      const constants = { WG: PARALLEL_WG, HV: headDim / 4 };
      const label = `attention-parallel${rope ? '-rope' : ''}${split ? '-split' : ''}-d${headDim}`;
      const store = split ? parallelPartial : parallelOut;
      const code = rope ? wgsl(io, ioVec4, KV_F32_WRITABLE, pages, outF32, parallel, store, parallelRope, angle) : wgsl(io, ioVec4, kvF32, pages, outF32, parallel, store, parallelPlain);
      this.parallel.set(key, (k = this.ctx.kernel({ label, code, bindings: rope ? ROPE_BINDINGS : BINDINGS, constants })));
    }
    return k;
  }

  /** attention-tiled.wgsl for heads of `headDim` and `group` query heads a KV head (tiledShape must apply). */
  private tiledKernel(headDim: number, group: number): { kernel: CompiledKernel; tokens: number } {
    const shape = tiledShape(headDim, group)!;
    const key = `tiled/${headDim}/${group}`;
    let k = this.parallel.get(key);
    if (!k) this.parallel.set(key, (k = this.ctx.kernel({ label: `attention-tiled-d${headDim}-g${group}`, code: wgsl(io, ioVec4, kvF32, pages, outF32, tiledSource), bindings: BINDINGS, constants: { WG: TILED_WG, HV: headDim / 4, ...shape } })));
    return { kernel: k, tokens: shape.BQ };
  }

  private combineKernel(headDim: number): CompiledKernel {
    const key = `combine/${headDim}`;
    let k = this.parallel.get(key);
    if (!k) this.parallel.set(key, (k = this.ctx.kernel({ label: `attention-combine-d${headDim}`, code: combine, bindings: COMBINE_BINDINGS, constants: { WG: COMBINE_WG, HV: headDim / 4 } })));
    return k;
  }

  /**
   * How many workgroups to split each (token, head) pair's positions over (AttentionParams.splits) for a
   * step of `tokens` whose longest attention span is `span` positions: 1 (no split) on CPU kernels, for
   * heads of other shapes, or below `minSpan`; else as many as fill SPLIT_WORKGROUPS with splits of at
   * least SPLIT_MIN_POSITIONS, at most MAX_SPLITS, and none where a short span gets fewer than
   * SPLIT_FEWEST_SHORT. A decode token's few heads are a few workgroups on a GPU of 100+ cores,
   * each walking every position; the split costs one combine dispatch.
   */
  splitsFor(tokens: number, heads: number, headDim: number, span: number, minSpan: number): number {
    if (!this.rotates(headDim) || span < minSpan) return 1;
    const splits = Math.min(MAX_SPLITS, Math.floor(SPLIT_WORKGROUPS / (tokens * heads)), Math.ceil(span / SPLIT_MIN_POSITIONS));
    return splits >= (span < SPLIT_LONG_SPAN ? SPLIT_FEWEST_SHORT : 2) ? splits : 1;
  }

  /** Bytes of the partial sums' buffer for steps whose splitsFor is at most SPLIT_WORKGROUPS pairs' worth. */
  static partialsBytes(headDim: number): number {
    return SPLIT_WORKGROUPS * (headDim / 4 + 1) * 16;
  }

  /** Bindings of the combine pass: the split kernel's partial sums (its `out`), and attention's output. */
  bindCombine(partials: GPUBuffer, out: GPUBuffer): GPUBindGroup {
    return this.ctx.bindGroup(COMBINE_BINDINGS, [partials, out], 'attention-combine');
  }

  /**
   * Whether this adapter's kernel can rotate Q and K and store K and V as it attends (AttentionParams.rope)
   * for heads of `headDim`: the GPU kernel for heads of whole vec4s over an f32 cache.
   */
  rotates(headDim: number): boolean {
    return !this.serial && this.kv === 'f32' && headDim % 4 === 0 && this.ctx.caps.maxInvocationsPerWorkgroup >= PARALLEL_WG;
  }

  /**
   * Bindings for AttentionParams.rope: `qkv` the un-rotated Q|K|V rows (q offset and stride as for
   * `bind`, K and V heads after the Q heads of each row), the caches written, RoPE's frequency factors last.
   */
  bindRope(qkv: GPUBuffer, kCache: GPUBuffer, vCache: GPUBuffer, pageTable: GPUBuffer, positions: GPUBuffer, tokenSeq: GPUBuffer, out: GPUBuffer, factors: GPUBuffer): GPUBindGroup {
    return this.ctx.bindGroup(ROPE_BINDINGS, [qkv, kCache, vCache, pageTable, positions, tokenSeq, out, factors], 'attention-rope');
  }

  bind(q: GPUBuffer, kCache: GPUBuffer, vCache: GPUBuffer, pageTable: GPUBuffer, positions: GPUBuffer, tokenSeq: GPUBuffer, out: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([q, kCache, vCache, pageTable, positions, tokenSeq, out]);
  }

  /**
   * Bindings for `kvSource: 'mirror'`: K and V of one layer mirrored in textures (engine/kv/kv-mirror.ts),
   * `firstRows[slot]` the mirror row of that sequence's position 0.
   */
  bindMirror(q: GPUBuffer, kMirror: GPUTexture, vMirror: GPUTexture, firstRows: GPUBuffer, positions: GPUBuffer, tokenSeq: GPUBuffer, out: GPUBuffer): GPUBindGroup {
    return this.ctx.bindGroup(MIRROR_BINDINGS, [q, kMirror, vMirror, firstRows, positions, tokenSeq, out], 'attention-mirror');
  }

  /** `combine` (bindCombine's group): where p.splits > 1, the combine pass's bindings. */
  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: AttentionParams, combine?: GPUBindGroup): void {
    if (p.headDim > ATTENTION_MAX_HEAD_DIM) throw new Error(`attention: head dimension ${p.headDim} exceeds ${ATTENTION_MAX_HEAD_DIM}`);
    if (p.heads % p.kvHeads !== 0) throw new Error(`attention: ${p.heads} heads is not a multiple of ${p.kvHeads} KV heads`);
    const s = arena.slot();
    const u = arena.u32;
    writeAttentionParams(u, arena.f32, s, p);
    const q8 = p.output === 'q8_0';
    const splits = p.splits ?? 1;
    // Output offsets and strides in vec4s (q8) need no check: only q's and f32 output's must be whole vec4s.
    const by4 = [p.headDim, u[s + 8], u[s + 9], ...(q8 ? [] : [u[s + 10], u[s + 11]])].every((v) => v % 4 === 0);
    if (q8 && (!this.serial || !by4 || p.headDim % 32 !== 0)) {
      throw new Error(`attention: quantized output needs the serial vec4 kernels, a head dimension that is a multiple of 32 (got ${p.headDim}) and q offsets and strides that are multiples of 4`);
    }
    if (p.kvSource === 'mirror' && (!this.serial || this.kv !== 'f16' || !by4)) {
      throw new Error('attention: the KV mirror is read by the serial vec4 kernels over an f16 cache only');
    }
    if (p.rope && (!this.rotates(p.headDim) || !by4 || q8 || p.kvSource === 'mirror')) {
      throw new Error(`attention: rotating as it attends needs the GPU kernel for heads of whole vec4s over an f32 cache, f32 output and q offsets and strides that are multiples of 4 (head dimension ${p.headDim})`);
    }
    if (this.serial && splits > 1) {
      if (!this.ctx.caps.orderedAtomics || !by4 || p.headDim % 8 !== 0 || p.kvSource === 'mirror' || splits > MAX_SERIAL_SPLITS) {
        throw new Error(`attention: serial split positions need atomics that order stores, heads of whole vec4 pairs (head dimension ${p.headDim}), the paged cache and at most ${MAX_SERIAL_SPLITS} splits (got ${splits})`);
      }
      const together = groupedHeads(p.heads, p.kvHeads, p.headDim);
      const [gx, gy] = grid2d(Math.ceil(((p.tokens * p.heads) / together) * splits / this.wgFor(together)));
      arena.dispatch(pass, this.vec4Kernel(p.headDim, q8 ? 'q8_0' : 'f32', together, 'pages', true), group, s, gx, gy);
      return;
    }
    if (splits > 1 && (!this.rotates(p.headDim) || !by4 || q8 || p.kvSource === 'mirror' || !combine || p.tokens * p.heads * splits > SPLIT_WORKGROUPS || splits > MAX_SPLITS)) {
      throw new Error(`attention: split positions need the GPU kernel for heads of whole vec4s, f32 output, a combine group and at most ${SPLIT_WORKGROUPS} workgroups of at most ${MAX_SPLITS} splits (${p.tokens} tokens x ${p.heads} heads x ${splits} splits)`);
    }
    const queryGroup = p.heads / p.kvHeads;
    if (!this.serial && p.tiled && splits === 1 && !p.rope && !q8 && p.kvSource !== 'mirror' && by4 && this.kv === 'f32' && tiledShape(p.headDim, queryGroup) && this.ctx.caps.maxInvocationsPerWorkgroup >= TILED_WG) {
      const tiled = this.tiledKernel(p.headDim, queryGroup);
      arena.dispatch(pass, tiled.kernel, group, s, Math.ceil(p.tokens / tiled.tokens), p.kvHeads);
      return;
    }
    if (!this.serial) {
      const [gx, gy] = grid2d(p.tokens * p.heads * splits);
      const wide = by4 && this.ctx.caps.maxInvocationsPerWorkgroup >= PARALLEL_WG;
      arena.dispatch(pass, wide ? this.parallelKernel(p.headDim, p.rope !== undefined, splits > 1) : this.kernel, group, s, gx, gy);
      if (splits > 1) {
        const c = arena.slot();
        u.set([p.tokens, p.heads, splits, p.outOffset ?? 0, u[s + 11]], c);
        const [cx, cy] = grid2d(Math.ceil((p.tokens * p.heads * p.headDim) / 4 / COMBINE_WG));
        arena.dispatch(pass, this.combineKernel(p.headDim), combine!, c, cx, cy);
      }
      return;
    }
    const together = by4 ? groupedHeads(p.heads, p.kvHeads, p.headDim) : 1;
    const many = (p.tokens * p.heads) / together >= this.minGroupedItems;
    const grouped = together > 1 && many;
    const paired = by4 && many && p.tokenPairs === true && p.tokens > 1 && (2 * together * p.headDim) / 4 <= PAIRED_MAX_VECS;
    const heads = grouped || paired ? together : 1;
    const tokensPer = paired ? 2 : 1;
    const [gx, gy] = grid2d(Math.ceil((Math.ceil(p.tokens / tokensPer) * p.heads) / heads / this.wgFor(heads * tokensPer)));
    if (this.kv === 'f16' && (!by4 || p.headDim % 8 !== 0)) {
      throw new Error(`attention: an f16 KV cache needs the vec4 kernels: a head dimension that is a multiple of 8 (got ${p.headDim}) and q and output offsets and strides that are multiples of 4`);
    }
    const kernel = by4 ? this.vec4Kernel(p.headDim, q8 ? 'q8_0' : 'f32', heads, p.kvSource, false, tokensPer) : this.kernel;
    arena.dispatch(pass, kernel, group, s, gx, gy);
  }
}
