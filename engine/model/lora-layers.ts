/**
 * The LoRA side of the forward pass: after each adapted base product of a step whose rows use adapters,
 * lora-a reads the same input the product read and lora-b adds the low-rank delta to its output. The
 * four groups of a layer follow the workspace's layout: q|k|v and gate|up read the normed x and write
 * side by side; o reads the attention output and down the activated hidden state, both adding into x.
 */
import { LoraAKernel, LoraBKernel, type LoraBuffers } from '../../kernels/lora.ts';
import type { ParamArena } from '../../kernels/runtime/arena.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import type { ModelConfig } from '../arch/types.ts';
import type { LoraPool } from '../lora/pool.ts';
import { TARGET_INDEX } from '../lora/targets.ts';
import type { Workspace } from './workspace.ts';

interface Group {
  targets: number[];
  /** Bitmask of the targets (TARGET_INDEX bits), to skip groups no adapter of the step touches. */
  mask: number;
  inDim: number;
  xStride: number;
  outs: number[];
  yOffsets: number[];
  yStride: number;
  x: 'xNorm' | 'attn' | 'act';
  y: 'qkv' | 'gateUp' | 'x';
}

export type LoraGroupName = 'qkv' | 'o' | 'gateUp' | 'down';

export class LoraLayers {
  private readonly a: LoraAKernel;
  private readonly b: LoraBKernel;
  private readonly groups: Record<LoraGroupName, Group>;
  private bound: { generation: number; a: Map<string, GPUBindGroup>; b: Map<string, GPUBindGroup> } | undefined;
  /** Per layer of the current step: the targets any of its adapters adapts there. */
  private readonly stepTargets: Uint8Array;
  private stepMaxRank = 0;

  constructor(
    ctx: KernelContext,
    private readonly cfg: ModelConfig,
    private readonly ws: Workspace,
    readonly pool: LoraPool,
  ) {
    this.a = new LoraAKernel(ctx);
    this.b = new LoraBKernel(ctx);
    const qDim = cfg.nHeads * cfg.headDim;
    const kvDim = cfg.nKvHeads * cfg.headDim;
    const D = cfg.dim;
    const F = cfg.ffnDim;
    const S = ws.qkvStride;
    const group = (names: (keyof typeof TARGET_INDEX)[], g: Omit<Group, 'targets' | 'mask'>): Group => ({
      ...g,
      targets: names.map((n) => TARGET_INDEX[n]),
      mask: names.reduce((m, n) => m | (1 << TARGET_INDEX[n]), 0),
    });
    this.groups = {
      qkv: group(['q', 'k', 'v'], { inDim: D, xStride: D, outs: [qDim, kvDim, kvDim], yOffsets: [0, qDim, qDim + kvDim], yStride: S, x: 'xNorm', y: 'qkv' }),
      o: group(['o'], { inDim: qDim, xStride: qDim, outs: [D], yOffsets: [0], yStride: D, x: 'attn', y: 'x' }),
      gateUp: group(['gate', 'up'], { inDim: D, xStride: D, outs: [F, F], yOffsets: [0, F], yStride: 2 * F, x: 'xNorm', y: 'gateUp' }),
      down: group(['down'], { inDim: F, xStride: F, outs: [D], yOffsets: [0], yStride: D, x: 'act', y: 'x' }),
    };
    this.stepTargets = new Uint8Array(cfg.nLayers);
  }

  /** Start a step: no adapter yet. */
  begin(): void {
    this.stepTargets.fill(0);
    this.stepMaxRank = 0;
  }

  /** A row of the step uses the adapter in pool slot `slot` (once per row or per token: idempotent). */
  use(slot: number): void {
    this.stepMaxRank = Math.max(this.stepMaxRank, this.pool.rankOf(slot));
    for (let l = 0; l < this.cfg.nLayers; l++) this.stepTargets[l] |= this.pool.targetsAt(slot, l);
  }

  /** Whether a row of this step has an adapter that adapts a target of group `name` at `layer`. */
  adapts(layer: number, name: LoraGroupName): boolean {
    return (this.stepTargets[layer] & this.groups[name].mask) !== 0;
  }

  /** Record lora-a and lora-b of `name` at `layer` for `tokens` rows, after the group's base product. */
  encode(pass: GPUComputePassEncoder, arena: ParamArena, layer: number, name: LoraGroupName, tokens: number): void {
    const g = this.groups[name];
    if (!this.adapts(layer, name)) return;
    const bound = this.bindGroups();
    const common = { tokens, layer, layers: this.cfg.nLayers, targetsPerLayer: this.pool.targetsPerLayer, targets: g.targets, maxRank: this.stepMaxRank };
    this.a.encode(pass, arena, bound.a.get(g.x)!, { ...common, inDim: g.inDim, xOffset: 0, xStride: g.xStride });
    this.b.encode(pass, arena, bound.b.get(g.y)!, { ...common, outs: g.outs, yOffsets: g.yOffsets, yStride: g.yStride });
  }

  /** Bind groups over the pool as it is now (it may have grown since the last step). */
  private bindGroups(): { a: Map<string, GPUBindGroup>; b: Map<string, GPUBindGroup> } {
    const pool = this.pool;
    if (this.bound?.generation === pool.generation) return this.bound;
    const buffers: LoraBuffers = { pool: pool.weights, directory: pool.directory, rowAdapter: this.ws.tokenAdapter, scratch: pool.scratch! };
    const ws = this.ws;
    this.bound = {
      generation: pool.generation,
      a: new Map([
        ['xNorm', this.a.bind(buffers, ws.xNorm)],
        ['attn', this.a.bind(buffers, ws.attn)],
        ['act', this.a.bind(buffers, ws.act)],
      ]),
      b: new Map([
        ['qkv', this.b.bind(buffers, ws.qkv)],
        ['gateUp', this.b.bind(buffers, ws.gateUp)],
        ['x', this.b.bind(buffers, ws.x)],
      ]),
    };
    return this.bound;
  }
}
