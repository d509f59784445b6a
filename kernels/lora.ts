/**
 * LoRA beside a base matrix product, per token row: lora-a computes t = A · x and lora-b adds
 * scale · B · t to the base product's output, each row with the adapter its sequence uses (or none).
 * Adapters live in one weight pool; a directory entry per (adapter, layer, target) says where its A and
 * B start, its rank and scale; the per-row adapter index is a step input. So one pair of dispatches
 * serves a whole mixed batch, whichever adapters its rows use.
 */
import loraAIo from './lora-a-io.wgsl?raw';
import loraASource from './lora-a.wgsl?raw';
import loraARowsSource from './lora-a-rows.wgsl?raw';
import loraBSource from './lora-b.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;

/** Row adapter index of a row that uses none. */
export const LORA_NO_ADAPTER = 0xffffffff;
/** u32 words per directory entry: A offset, B offset (f32 elements of the pool), rank, scale (f32 bits). */
export const LORA_ENTRY_WORDS = 4;
/** Most targets one dispatch covers (q|k|v). */
export const LORA_MAX_MEMBERS = 3;

/** The buffers every LoRA dispatch reads. */
export interface LoraBuffers {
  /** All adapters' A and B matrices, f32, row-major (A: rank × in, B: out × rank). */
  pool: GPUBuffer;
  /** Entry (adapter · layers + layer) · targetsPerLayer + target, LORA_ENTRY_WORDS each; rank 0 = not adapted. */
  directory: GPUBuffer;
  /** One u32 per token of the step: its adapter, or LORA_NO_ADAPTER. */
  rowAdapter: GPUBuffer;
  /** Intermediate t: tokens × tStride f32. */
  scratch: GPUBuffer;
}

/** Where entries are in the directory, and the group of targets a dispatch covers. */
export interface LoraGroupParams {
  tokens: number;
  layer: number;
  layers: number;
  targetsPerLayer: number;
  /** Directory target indices of the group's members (at most LORA_MAX_MEMBERS). */
  targets: readonly number[];
  /** Largest rank of any adapter a row of this step uses: t holds maxRank values per member. */
  maxRank: number;
}

export interface LoraAParams extends LoraGroupParams {
  inDim: number;
  xOffset: number;
  xStride: number;
}

export interface LoraBParams extends LoraGroupParams {
  /** Per member: output width, and its first column in y's rows. */
  outs: readonly number[];
  yOffsets: readonly number[];
  yStride: number;
}

function checkGroup(label: string, p: LoraGroupParams): void {
  if (p.targets.length < 1 || p.targets.length > LORA_MAX_MEMBERS) throw new Error(`${label}: ${p.targets.length} targets in one dispatch (1..${LORA_MAX_MEMBERS})`);
  if (!(p.maxRank >= 1)) throw new Error(`${label}: maxRank must be at least 1 (got ${p.maxRank})`);
}

/** Scratch stride in f32 per token for a group: member m's t values start at m · maxRank. */
export function loraScratchStride(members: number, maxRank: number): number {
  return members * maxRank;
}

/**
 * `workgroup`: a workgroup per row of A reduces it against x (GPUs); `rows`: an invocation per row of A
 * does the whole dot product, with no barrier (CPU rasterisers, where barriers cost more than they share).
 */
export type LoraAVariant = 'workgroup' | 'rows';

export class LoraAKernel {
  readonly kernel: CompiledKernel;
  readonly variant: LoraAVariant;
  constructor(ctx: KernelContext, variant?: LoraAVariant) {
    this.variant = variant ?? (ctx.caps.software ? 'rows' : 'workgroup');
    const code = wgsl(this.variant === 'rows' ? loraARowsSource : loraASource, loraAIo);
    this.kernel = ctx.kernel({ label: `lora-a-${this.variant}`, code, bindings: ['read', 'read', 'read', 'read', 'write'], constants: { WG } });
  }

  bind(b: LoraBuffers, x: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([b.pool, b.directory, b.rowAdapter, x, b.scratch]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: LoraAParams): void {
    checkGroup('lora-a', p);
    const s = arena.slot();
    const u = arena.u32;
    u[s] = p.tokens;
    u[s + 1] = p.inDim;
    u[s + 2] = p.xOffset;
    u[s + 3] = p.xStride;
    u[s + 4] = p.layer;
    u[s + 5] = p.layers;
    u[s + 6] = p.targetsPerLayer;
    u[s + 7] = p.targets.length;
    u[s + 8] = p.maxRank;
    u[s + 9] = loraScratchStride(p.targets.length, p.maxRank);
    for (let m = 0; m < p.targets.length; m++) u[s + 12 + m] = p.targets[m];
    const rows = p.tokens * p.targets.length * p.maxRank;
    const [gx, gy] = grid2d(this.variant === 'rows' ? Math.ceil(rows / WG) : rows);
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}

export class LoraBKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'lora-b', code: loraBSource, bindings: ['read', 'read', 'read', 'read', 'write'], constants: { WG } });
  }

  bind(b: LoraBuffers, y: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([b.pool, b.directory, b.rowAdapter, b.scratch, y]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: LoraBParams): void {
    checkGroup('lora-b', p);
    const n = p.targets.length;
    if (p.outs.length !== n || p.yOffsets.length !== n) throw new Error(`lora-b: ${n} targets but ${p.outs.length} output widths and ${p.yOffsets.length} offsets`);
    const s = arena.slot();
    const u = arena.u32;
    let total = 0;
    for (const o of p.outs) total += o;
    u[s] = p.tokens;
    u[s + 1] = p.layer;
    u[s + 2] = p.layers;
    u[s + 3] = p.targetsPerLayer;
    u[s + 4] = n;
    u[s + 5] = p.maxRank;
    u[s + 6] = loraScratchStride(n, p.maxRank);
    u[s + 7] = p.yStride;
    u[s + 8] = total;
    for (let m = 0; m < n; m++) {
      u[s + 12 + m] = p.targets[m];
      u[s + 16 + m] = p.outs[m];
      u[s + 20 + m] = p.yOffsets[m];
    }
    const [gx, gy] = grid2d(Math.ceil((p.tokens * total) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
