/**
 * The trainer's GPU buffers, sized once for `maxTokens` tokens per forward pass: the inputs of a packed
 * micro-batch, every activation the backward pass reads (kept per layer), the backward scratch, and the
 * adapter's parameters, gradients and AdamW moments. Per token and layer that is 4·dim + 2·(H + KV)·head
 * + 3·ffn + 2 + 2·H + rank·targets floats. The logits hold as many counted positions' rows of vocab
 * floats as fit one binding, up to maxTokens; longer batches go through the output head in chunks.
 */
import type { ModelConfig } from '../../arch/types.ts';
import { REDUCE_PARTIALS } from '../../../kernels/train/reduce.ts';
import type { KernelContext } from '../../../kernels/runtime/context.ts';
import { yieldToHost } from '../../platform/yield.ts';
import type { LoraLayout } from './lora-layout.ts';

export interface LayerActivations {
  /** The layer's input (the residual stream before it). */
  x: GPUBuffer;
  xn1: GPUBuffer;
  rstd1: GPUBuffer;
  /** After RoPE. */
  q: GPUBuffer;
  k: GPUBuffer;
  v: GPUBuffer;
  att: GPUBuffer;
  /** [log-sum-exp, D] per (token, head). */
  stats: GPUBuffer;
  /** The residual stream after attention. */
  x2: GPUBuffer;
  xn2: GPUBuffer;
  rstd2: GPUBuffer;
  gate: GPUBuffer;
  up: GPUBuffer;
  h: GPUBuffer;
  /** x·Aᵀ (T × rank) of each adapted matrix of the layer, by target. */
  lora: Map<string, GPUBuffer>;
}

/** A token's widths: the residual stream, the FFN, all query heads, all KV heads. */
function widths(cfg: ModelConfig): { dim: number; ffn: number; qDim: number; kvDim: number } {
  return { dim: cfg.dim, ffn: cfg.ffnDim, qDim: cfg.nHeads * cfg.headDim, kvDim: cfg.nKvHeads * cfg.headDim };
}

export class TrainWorkspace {
  readonly ids: GPUBuffer;
  readonly positions: GPUBuffer;
  readonly span: GPUBuffer;
  /** Per counted position (a token whose next token counts in the loss): its token index, target and weight. */
  readonly countedRows: GPUBuffer;
  readonly targets: GPUBuffer;
  readonly mask: GPUBuffer;
  /** Per token: its counted row, or NO_ROW. */
  readonly rowOf: GPUBuffer;
  readonly layers: LayerActivations[];
  /** Input of the output norm (the last layer's output). */
  readonly xLast: GPUBuffer;
  readonly xf: GPUBuffer;
  readonly rstdF: GPUBuffer;
  /** xf at the counted positions, and its gradient. */
  readonly xfc: GPUBuffer;
  readonly dxfc: GPUBuffer;
  /** Logits of a chunk of counted positions, replaced in place by their gradient. */
  readonly logits: GPUBuffer;
  readonly logitRows: number;
  readonly tokenLoss: GPUBuffer;
  readonly dx: GPUBuffer;
  readonly dxn: GPUBuffer;
  readonly dh: GPUBuffer;
  readonly dgate: GPUBuffer;
  readonly dup: GPUBuffer;
  readonly datt: GPUBuffer;
  readonly dq: GPUBuffer;
  readonly dk: GPUBuffer;
  readonly dv: GPUBuffer;
  /** dY·B (T × rank), reused by every adapted matrix in turn. */
  readonly lg: GPUBuffer;
  readonly params: GPUBuffer;
  readonly grads: GPUBuffer;
  readonly m: GPUBuffer;
  readonly v: GPUBuffer;
  /** [summed loss, squared gradient norm, 0, 0]. */
  readonly scalars: GPUBuffer;
  readonly partials: GPUBuffer;
  readonly readback: GPUBuffer;
  private readonly all: GPUBuffer[] = [];
  private readonly limit: number;

  /**
   * The workspace, a layer's activations at a time with the thread yielded between them: on llvmpipe a buffer's
   * creation runs on the calling thread at about 0.3 GB/s (SmolLM2's 520 MB for 512 tokens: 1.7 s), and
   * between layers a server answers. Nothing is left allocated if it throws.
   */
  static async create(ctx: KernelContext, cfg: ModelConfig, layout: LoraLayout, maxTokens: number, headRows?: number): Promise<TrainWorkspace> {
    const ws = new TrainWorkspace(ctx, cfg, layout, maxTokens, headRows);
    try {
      for (let l = 0; l < cfg.nLayers; l++) {
        await yieldToHost();
        ws.layers.push(ws.layerActivations(ctx, cfg, layout, l));
      }
    } catch (e) {
      ws.destroy();
      throw e;
    }
    return ws;
  }

  /** Everything but the layers' activations (create() adds them). */
  private constructor(
    ctx: KernelContext,
    cfg: ModelConfig,
    layout: LoraLayout,
    readonly maxTokens: number,
    headRows?: number,
  ) {
    try {
      const T = maxTokens;
      this.limit = Math.min(ctx.caps.maxStorageBinding, ctx.caps.maxBufferSize);
      const limit = this.limit;
      const buf = (label: string, floats: number) => this.buffer(ctx, label, floats);
      const { dim, ffn, qDim, kvDim } = widths(cfg);
      this.ids = buf('ids', T);
      this.positions = buf('positions', T);
      this.span = buf('span', 2 * T);
      this.countedRows = buf('counted-rows', T);
      this.targets = buf('targets', T);
      this.mask = buf('mask', T);
      this.rowOf = buf('row-of', T);
      this.layers = [];
      this.xLast = buf('x-last', T * dim);
      this.xf = buf('xf', T * dim);
      this.rstdF = buf('rstd-f', T);
      this.xfc = buf('xf-counted', T * dim);
      this.dxfc = buf('dxf-counted', T * dim);
      this.logitRows = Math.min(T, headRows ?? T, Math.floor(limit / (4 * cfg.vocabSize)));
      if (this.logitRows < 1) throw new Error(`one row of ${cfg.vocabSize} logits is more than one GPU binding holds (${limit} bytes)`);
      this.logits = buf('logits', this.logitRows * cfg.vocabSize);
      this.tokenLoss = buf('token-loss', T);
      this.dx = buf('dx', T * dim);
      this.dxn = buf('dxn', T * dim);
      this.dh = buf('dh', T * ffn);
      this.dgate = buf('dgate', T * ffn);
      this.dup = buf('dup', T * ffn);
      this.datt = buf('datt', T * qDim);
      this.dq = buf('dq', T * qDim);
      this.dk = buf('dk', T * kvDim);
      this.dv = buf('dv', T * kvDim);
      this.lg = buf('lg', T * layout.rank);
      const n = layout.parameterCount;
      this.params = buf('params', n);
      this.grads = buf('grads', n);
      this.m = buf('adam-m', n);
      this.v = buf('adam-v', n);
      this.scalars = buf('scalars', 4);
      this.partials = buf('partials', REDUCE_PARTIALS);
      this.readback = ctx.device.createBuffer({ label: 'train.readback', size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      this.all.push(this.readback);
    } catch (e) {
      this.destroy();
      throw e;
    }
  }

  private layerActivations(ctx: KernelContext, cfg: ModelConfig, layout: LoraLayout, l: number): LayerActivations {
    const T = this.maxTokens;
    const buf = (label: string, floats: number) => this.buffer(ctx, label, floats);
    const { dim, ffn, qDim, kvDim } = widths(cfg);
    const lora = new Map<string, GPUBuffer>();
    for (const s of layout.slots) if (s.layer === l) lora.set(s.target, buf(`${l}.lora.${s.target}`, T * layout.rank));
    return {
      x: buf(`${l}.x`, T * dim),
      xn1: buf(`${l}.xn1`, T * dim),
      rstd1: buf(`${l}.rstd1`, T),
      q: buf(`${l}.q`, T * qDim),
      k: buf(`${l}.k`, T * kvDim),
      v: buf(`${l}.v`, T * kvDim),
      att: buf(`${l}.att`, T * qDim),
      stats: buf(`${l}.stats`, 2 * T * cfg.nHeads),
      x2: buf(`${l}.x2`, T * dim),
      xn2: buf(`${l}.xn2`, T * dim),
      rstd2: buf(`${l}.rstd2`, T),
      gate: buf(`${l}.gate`, T * ffn),
      up: buf(`${l}.up`, T * ffn),
      h: buf(`${l}.h`, T * ffn),
      lora,
    };
  }

  private buffer(ctx: KernelContext, label: string, floats: number): GPUBuffer {
    if (floats * 4 > this.limit) throw new Error(`training buffer ${label} needs ${floats * 4} bytes (maxTokens ${this.maxTokens}), more than one GPU binding holds (${this.limit}); lower maxTokens`);
    const b = ctx.storage(`train.${label}`, floats * 4);
    this.all.push(b);
    return b;
  }

  get bytes(): number {
    return this.all.reduce((s, b) => s + b.size, 0);
  }

  destroy(): void {
    for (const b of this.all) b.destroy();
  }
}
