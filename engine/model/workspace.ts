/** Activation buffers for one step of up to `maxTokens` tokens and `maxRows` sampled rows, made once. */
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { SAMPLE_OUT_WORDS, SAMPLE_ROW_BYTES, samplePartialsBytes } from '../../kernels/sampling/sample.ts';
import { PENALTY_ROW_BYTES, PENALTY_ENTRY_BYTES } from '../../kernels/sampling/penalties.ts';
import { TOPK_ROW_WORDS } from '../../kernels/sampling/topk.ts';
import type { ModelConfig } from '../arch/types.ts';

/** Most distinct tokens the penalty kernel sees per step (all rows together). */
export const MAX_PENALTY_ENTRIES = 65536;

export class Workspace {
  // Step inputs (uploaded each step).
  readonly tokens: GPUBuffer;
  readonly positions: GPUBuffer;
  readonly slots: GPUBuffer;
  /** Per token: the pool slot of its sequence's LoRA adapter, or LORA_NO_ADAPTER (uploaded only in steps that use one). */
  readonly tokenAdapter: GPUBuffer;
  readonly lastIndex: GPUBuffer;
  readonly sampleSettings: GPUBuffer;
  readonly mask: GPUBuffer;
  readonly penaltyRows: GPUBuffer;
  readonly penaltyEntries: GPUBuffer;
  // Activations.
  readonly x: GPUBuffer;
  readonly xNorm: GPUBuffer;
  /** Per token: [q (heads) | k (kv heads) | v (kv heads)], so RoPE covers q and k in one dispatch. */
  readonly qkv: GPUBuffer;
  readonly attn: GPUBuffer;
  /** Per token: [gate | up]. */
  readonly gateUp: GPUBuffer;
  readonly act: GPUBuffer;
  readonly xLastNorm: GPUBuffer;
  readonly logits: GPUBuffer;
  // Outputs and their readback copies.
  readonly samplePartials: GPUBuffer;
  readonly sampleOut: GPUBuffer;
  readonly topkOut: GPUBuffer;
  /**
   * Two staging buffers for the sampled rows, used in turn, so a step can be submitted while the one
   * before it still waits to be read (pipelined decode).
   */
  readonly sampleReads: readonly [GPUBuffer, GPUBuffer];
  readonly topkRead: GPUBuffer;
  readonly qkvStride: number;
  readonly maskWords: number;
  readonly bytes: number;
  private readonly all: GPUBuffer[] = [];

  constructor(ctx: KernelContext, cfg: ModelConfig, readonly maxTokens: number, readonly maxRows: number) {
    const qDim = cfg.nHeads * cfg.headDim;
    const kvDim = cfg.nKvHeads * cfg.headDim;
    this.qkvStride = qDim + 2 * kvDim;
    this.maskWords = Math.ceil(cfg.vocabSize / 32);
    const f = (name: string, elements: number) => this.track(ctx.storage(name, elements * 4));
    const T = maxTokens;
    this.tokens = f('step.tokens', T);
    this.positions = f('step.positions', T);
    this.slots = f('step.slots', T);
    this.tokenAdapter = f('step.token-adapter', T);
    this.lastIndex = f('step.last-index', maxRows);
    this.sampleSettings = this.track(ctx.storage('step.sample-settings', maxRows * SAMPLE_ROW_BYTES));
    this.mask = f('step.mask', maxRows * this.maskWords);
    this.penaltyRows = this.track(ctx.storage('step.penalty-rows', maxRows * PENALTY_ROW_BYTES));
    this.penaltyEntries = this.track(ctx.storage('step.penalty-entries', MAX_PENALTY_ENTRIES * PENALTY_ENTRY_BYTES));
    this.x = f('act.x', T * cfg.dim);
    this.xNorm = f('act.x-norm', T * cfg.dim);
    this.qkv = f('act.qkv', T * this.qkvStride);
    this.attn = f('act.attn', T * qDim);
    this.gateUp = f('act.gate-up', T * 2 * cfg.ffnDim);
    this.act = f('act.ffn', T * cfg.ffnDim);
    this.xLastNorm = f('act.x-last-norm', maxRows * cfg.dim);
    this.logits = f('act.logits', maxRows * cfg.vocabSize);
    this.samplePartials = this.track(ctx.storage('act.sample-partials', samplePartialsBytes(maxRows, cfg.vocabSize)));
    this.sampleOut = f('out.sample', maxRows * SAMPLE_OUT_WORDS);
    this.topkOut = f('out.topk', maxRows * TOPK_ROW_WORDS);
    const read = (name: string, bytes: number) =>
      this.track(ctx.device.createBuffer({ label: name, size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
    this.sampleReads = [read('read.sample.0', this.sampleOut.size), read('read.sample.1', this.sampleOut.size)];
    this.topkRead = read('read.topk', this.topkOut.size);
    this.bytes = this.all.reduce((n, b) => n + b.size, 0);
  }

  private track(b: GPUBuffer): GPUBuffer {
    this.all.push(b);
    return b;
  }

  destroy(): void {
    for (const b of this.all) b.destroy();
  }
}
