/**
 * The dispatches of one training micro-batch, in order: the forward pass saving what backward needs, the
 * masked cross-entropy, the backward pass to every adapted A and B, and the optimizer update. Buffers come
 * from the workspace; nothing here waits on the GPU.
 */
import type { ModelConfig } from '../../arch/types.ts';
import type { LoraTarget } from '../../lora/adapter-file.ts';
import type { OptimizerSettings } from '../types.ts';
import { AdamWKernel } from '../../../kernels/train/adamw.ts';
import { TrainAttentionKernels } from '../../../kernels/train/attention.ts';
import { CrossEntropyKernel } from '../../../kernels/train/cross-entropy.ts';
import { GatherRowsKernel } from '../../../kernels/train/gather-rows.ts';
import { TrainEmbeddingKernel } from '../../../kernels/train/embedding.ts';
import { TrainMatmulKernel, type TrainMatmulParams } from '../../../kernels/train/matmul.ts';
import { ReduceKernel } from '../../../kernels/train/reduce.ts';
import { TrainRmsNormBackward, TrainRmsNormForward } from '../../../kernels/train/rmsnorm.ts';
import { TrainRopeKernel } from '../../../kernels/train/rope.ts';
import { TrainSwiGluKernels } from '../../../kernels/train/swiglu.ts';
import type { KernelContext } from '../../../kernels/runtime/context.ts';
import { targetShape, type BaseWeights } from './base-weights.ts';
import type { LoraLayout } from './lora-layout.ts';
import { BindCache, type Recorder } from './recorder.ts';
import type { TrainWorkspace } from './workspace.ts';

/** Where the reductions leave their sums in workspace.scalars. */
export const LOSS_INDEX = 0;
export const NORM_INDEX = 1;

export class TrainProgram {
  private readonly binds = new BindCache();
  private readonly matmul: TrainMatmulKernel;
  private readonly normF: TrainRmsNormForward;
  private readonly normB: TrainRmsNormBackward;
  private readonly rope: TrainRopeKernel;
  private readonly attention: TrainAttentionKernels;
  private readonly swiglu: TrainSwiGluKernels;
  private readonly ce: CrossEntropyKernel;
  private readonly reduce: ReduceKernel;
  private readonly adamw: AdamWKernel;
  private readonly embedding: TrainEmbeddingKernel;
  private readonly gather: GatherRowsKernel;

  constructor(
    ctx: KernelContext,
    private readonly cfg: ModelConfig,
    private readonly base: BaseWeights,
    private readonly layout: LoraLayout,
    private readonly ws: TrainWorkspace,
  ) {
    this.matmul = new TrainMatmulKernel(ctx);
    this.normF = new TrainRmsNormForward(ctx);
    this.normB = new TrainRmsNormBackward(ctx);
    this.rope = new TrainRopeKernel(ctx);
    this.attention = new TrainAttentionKernels(ctx, cfg.headDim);
    this.attention.checkSequenceTokens(ctx.caps, ws.maxTokens, cfg.nHeads, cfg.nKvHeads);
    this.swiglu = new TrainSwiGluKernels(ctx);
    this.ce = new CrossEntropyKernel(ctx);
    this.reduce = new ReduceKernel(ctx);
    this.adamw = new AdamWKernel(ctx);
    this.embedding = new TrainEmbeddingKernel(ctx);
    this.gather = new GatherRowsKernel(ctx);
  }

  /** Dispatches per micro-batch, generously: sizes the parameter arena. */
  get maxDispatches(): number {
    const slices = Math.ceil(this.cfg.vocabSize / this.headSlice(1, 1));
    return 32 + (1 + 2 * slices) * Math.ceil(this.ws.maxTokens / this.ws.logitRows) + this.cfg.nLayers * 96;
  }

  /**
   * Vocabulary rows of the output head one submit takes, for `rows` counted positions of a micro-batch of
   * `tokens` tokens: about the multiply-adds of one layer's projections, so the head, the largest product of
   * a small model, is not one long submit. On llvmpipe a submit runs on the server's thread: SmolLM2's head
   * forward and back for 12 positions held it 3.4 s in one, where a layer takes 0.25 s. A multiple of 64
   * vocabulary rows, at least 256.
   */
  private headSlice(tokens: number, rows: number): number {
    const c = this.cfg;
    const q = c.nHeads * c.headDim;
    const kv = c.nKvHeads * c.headDim;
    const layerWeights = c.dim * (q + 2 * kv) + q * c.dim + 3 * c.dim * c.ffnDim;
    const slice = Math.floor((tokens * layerWeights) / (rows * c.dim) / 64) * 64;
    return Math.min(c.vocabSize, Math.max(256, slice));
  }

  /**
   * Forward pass of T packed tokens and the loss of their `counted` counted positions (at least 1); the
   * summed loss is added to scalars[LOSS_INDEX].
   */
  forward(rec: Recorder, T: number, counted: number, invCount: number, training: boolean): void {
    const { cfg, base, ws } = this;
    const a0 = rec.arena;
    const rowBytes = T * cfg.dim * 4;
    this.embedding.encode(rec.pass, a0, this.binds.bind(this.embedding.kernel, [base.embedding, ws.ids, ws.layers[0].x]), { tokens: T, dim: cfg.dim, scale: cfg.embedScale });
    for (let l = 0; l < cfg.nLayers; l++) {
      const a = ws.layers[l];
      const w = base.layers[l];
      const next = l + 1 < cfg.nLayers ? ws.layers[l + 1].x : ws.xLast;
      this.normForward(rec, a.x, w.attnNorm, a.xn1, a.rstd1, T);
      this.project(rec, l, 'q', a.xn1, a.q, T, false);
      this.project(rec, l, 'k', a.xn1, a.k, T, false);
      this.project(rec, l, 'v', a.xn1, a.v, T, false);
      this.rotate(rec, a.q, cfg.nHeads, T, 1);
      this.rotate(rec, a.k, cfg.nKvHeads, T, 1);
      this.attention.encode(rec.pass, a0, 'forward', this.binds.bind(this.attention.forward, [a.q, a.k, a.v, ws.span, a.att, a.stats]), this.heads(T));
      rec.copy(a.x, a.x2, rowBytes);
      this.project(rec, l, 'o', a.att, a.x2, T, true);
      this.normForward(rec, a.x2, w.ffnNorm, a.xn2, a.rstd2, T);
      this.project(rec, l, 'gate', a.xn2, a.gate, T, false);
      this.project(rec, l, 'up', a.xn2, a.up, T, false);
      this.swiglu.encode(rec.pass, a0, 'forward', this.binds.bind(this.swiglu.forward, [a.gate, a.up, a.h]), T * cfg.ffnDim);
      rec.copy(a.x2, next, rowBytes);
      this.project(rec, l, 'down', a.h, next, T, true);
      rec.boundary();
    }
    // Only the counted positions go through the output head: in chat data most tokens are prompt, and the
    // head (vocabulary × dim) is the largest product of a small model. When training, each chunk's logits
    // become their gradient in place and go straight back through the head, so a chunk's buffer is reused.
    this.normForward(rec, ws.xLast, base.outputNorm, ws.xf, ws.rstdF, T);
    this.gather.encode(rec.pass, a0, this.binds.bind(this.gather.kernel, [ws.xf, ws.countedRows, ws.xfc]), { rows: counted, dim: cfg.dim });
    const V = cfg.vocabSize;
    const D = cfg.dim;
    for (let c0 = 0; c0 < counted; c0 += ws.logitRows) {
      const n = Math.min(ws.logitRows, counted - c0);
      const slice = this.headSlice(T, n);
      // Logits a slice of the vocabulary at a time, then their gradient back through the same slices,
      // summed into dxfc: each slice its own submit (headSlice).
      for (let v0 = 0; v0 < V; v0 += slice) {
        const w = Math.min(slice, V - v0);
        this.mm(rec, [ws.xfc, base.head, ws.logits], { m: n, n: w, k: D, transA: false, transB: true, lda: D, ldb: D, ldc: V, aOffset: c0 * D, bOffset: v0 * D, cOffset: v0, accumulate: false });
        rec.boundary();
      }
      this.ce.encode(rec.pass, a0, this.binds.bind(this.ce.kernel, [ws.logits, ws.targets, ws.mask, ws.tokenLoss]), { tokens: n, vocab: V, invCount, writeGrad: training, rowOffset: c0 });
      if (!training) continue;
      for (let v0 = 0; v0 < V; v0 += slice) {
        const w = Math.min(slice, V - v0);
        this.mm(rec, [ws.logits, base.head, ws.dxfc], { m: n, n: D, k: w, transA: false, transB: false, lda: V, ldb: D, ldc: D, aOffset: v0, bOffset: v0 * D, cOffset: c0 * D, accumulate: v0 > 0 });
        rec.boundary();
      }
    }
    this.sum(rec, ws.tokenLoss, counted, false, LOSS_INDEX, true);
    rec.boundary();
  }

  /** Backward from the gradient at the counted positions (left in ws.dxfc by forward) to the adapter's gradients (added to ws.grads). */
  backward(rec: Recorder, T: number): void {
    const { cfg, base, ws } = this;
    this.gather.encode(rec.pass, rec.arena, this.binds.bind(this.gather.kernel, [ws.dxfc, ws.rowOf, ws.dxn]), { rows: T, dim: cfg.dim });
    this.normBackward(rec, ws.xLast, base.outputNorm, ws.rstdF, ws.dxn, ws.dx, T, false);
    for (let l = cfg.nLayers - 1; l >= 0; l--) {
      const a = ws.layers[l];
      const w = base.layers[l];
      // ws.dx holds the gradient of this layer's output.
      this.projectBack(rec, l, 'down', ws.dx, a.h, ws.dh, T, false, true);
      this.swiglu.encode(rec.pass, rec.arena, 'backward', this.binds.bind(this.swiglu.backward, [a.gate, a.up, ws.dh, ws.dgate, ws.dup]), T * cfg.ffnDim);
      this.projectBack(rec, l, 'gate', ws.dgate, a.xn2, ws.dxn, T, false, true);
      this.projectBack(rec, l, 'up', ws.dup, a.xn2, ws.dxn, T, true, true);
      this.normBackward(rec, a.x2, w.ffnNorm, a.rstd2, ws.dxn, ws.dx, T, true);
      this.projectBack(rec, l, 'o', ws.dx, a.att, ws.datt, T, false, true);
      this.attention.encode(rec.pass, rec.arena, 'backwardQ', this.binds.bind(this.attention.backwardQ, [a.q, a.k, a.v, ws.span, a.att, ws.datt, a.stats, ws.dq]), this.heads(T));
      this.attention.encode(rec.pass, rec.arena, 'backwardKv', this.binds.bind(this.attention.backwardKv, [a.q, a.k, a.v, ws.span, ws.datt, a.stats, ws.dk, ws.dv]), this.heads(T));
      this.rotate(rec, ws.dq, cfg.nHeads, T, -1);
      this.rotate(rec, ws.dk, cfg.nKvHeads, T, -1);
      // The embeddings are frozen: below the first layer only the adapters' own gradients matter.
      const needInput = l > 0;
      this.projectBack(rec, l, 'q', ws.dq, a.xn1, ws.dxn, T, false, needInput);
      this.projectBack(rec, l, 'k', ws.dk, a.xn1, ws.dxn, T, true, needInput);
      this.projectBack(rec, l, 'v', ws.dv, a.xn1, ws.dxn, T, true, needInput);
      if (needInput) this.normBackward(rec, a.x, w.attnNorm, a.rstd1, ws.dxn, ws.dx, T, true);
      rec.boundary();
    }
  }

  /** Squared gradient norm into scalars[NORM_INDEX], then AdamW (clipping by that norm) on every parameter. */
  update(rec: Recorder, lr: number, step: number, opt: OptimizerSettings): void {
    const ws = this.ws;
    const n = this.layout.parameterCount;
    this.sum(rec, ws.grads, n, true, NORM_INDEX, false);
    this.adamw.encode(rec.pass, rec.arena, this.binds.bind(this.adamw.kernel, [ws.params, ws.grads, ws.m, ws.v, ws.scalars]), {
      n,
      normIndex: NORM_INDEX,
      lr,
      beta1: opt.beta1,
      beta2: opt.beta2,
      epsilon: opt.epsilon,
      weightDecay: opt.weightDecay,
      step,
      clip: opt.clipNorm,
    });
  }

  private sum(rec: Recorder, x: GPUBuffer, n: number, squares: boolean, outIndex: number, accumulate: boolean): void {
    const { partials, scalars } = this.ws;
    const groups: [GPUBindGroup, GPUBindGroup] = [this.binds.bind(this.reduce.kernel, [x, partials]), this.binds.bind(this.reduce.kernel, [partials, scalars])];
    this.reduce.encode(rec.pass, rec.arena, groups, { n, squares, outIndex, accumulate });
  }

  private heads(T: number) {
    return { tokens: T, heads: this.cfg.nHeads, kvHeads: this.cfg.nKvHeads };
  }

  private mm(rec: Recorder, buffers: [GPUBuffer, GPUBuffer, GPUBuffer], p: TrainMatmulParams): void {
    this.matmul.encode(rec.pass, rec.arena, this.binds.bind(this.matmul.kernel(p), buffers), p);
  }

  private normForward(rec: Recorder, x: GPUBuffer, weight: GPUBuffer, y: GPUBuffer, rstd: GPUBuffer, T: number): void {
    this.normF.encode(rec.pass, rec.arena, this.binds.bind(this.normF.kernel, [x, weight, y, rstd]), { rows: T, n: this.cfg.dim, eps: this.cfg.rmsEps });
  }

  private normBackward(rec: Recorder, x: GPUBuffer, weight: GPUBuffer, rstd: GPUBuffer, dy: GPUBuffer, dx: GPUBuffer, T: number, accumulate: boolean): void {
    this.normB.encode(rec.pass, rec.arena, this.binds.bind(this.normB.kernel, [x, weight, rstd, dy, dx]), { rows: T, n: this.cfg.dim, accumulate });
  }

  private rotate(rec: Recorder, x: GPUBuffer, heads: number, T: number, direction: 1 | -1): void {
    const r = this.cfg.rope;
    this.rope.encode(rec.pass, rec.arena, this.binds.bind(this.rope.kernel, [x, this.ws.positions, this.base.ropeFactors]), {
      tokens: T,
      heads,
      headDim: this.cfg.headDim,
      nRot: r.nRot,
      neox: r.neox,
      freqBase: r.base,
      freqScale: r.freqScale,
      useFactors: this.base.useRopeFactors,
      direction,
    });
  }

  /** y (+)= x·Wᵀ + scale·(x·Aᵀ)·Bᵀ, keeping x·Aᵀ for the backward pass. */
  private project(rec: Recorder, layer: number, target: LoraTarget, x: GPUBuffer, y: GPUBuffer, T: number, accumulate: boolean): void {
    const { inDim, outDim } = targetShape(this.cfg, target);
    this.mm(rec, [x, this.base.layers[layer].matrices[target], y], { m: T, n: outDim, k: inDim, transA: false, transB: true, lda: inDim, ldb: inDim, ldc: outDim, accumulate });
    const slot = this.layout.find(layer, target);
    if (!slot) return;
    const r = this.layout.rank;
    const u = this.ws.layers[layer].lora.get(target)!;
    this.mm(rec, [x, this.ws.params, u], { m: T, n: r, k: inDim, transA: false, transB: true, lda: inDim, ldb: inDim, ldc: r, bOffset: slot.aOffset, accumulate: false });
    this.mm(rec, [u, this.ws.params, y], { m: T, n: outDim, k: r, transA: false, transB: true, lda: r, ldb: r, ldc: outDim, bOffset: slot.bOffset, accumulate: true, alpha: this.layout.scale });
  }

  /**
   * Given dy, the gradient of a projection's output: dx (+)= dy·W + scale·(dy·B)·A (when the input's gradient
   * is needed), dA += scale·(dy·B)ᵀ·x and dB += scale·dyᵀ·(x·Aᵀ).
   */
  private projectBack(rec: Recorder, layer: number, target: LoraTarget, dy: GPUBuffer, x: GPUBuffer, dx: GPUBuffer, T: number, accumulate: boolean, needInput: boolean): void {
    const { inDim, outDim } = targetShape(this.cfg, target);
    if (needInput) {
      this.mm(rec, [dy, this.base.layers[layer].matrices[target], dx], { m: T, n: inDim, k: outDim, transA: false, transB: false, lda: outDim, ldb: inDim, ldc: inDim, accumulate });
    }
    const slot = this.layout.find(layer, target);
    if (!slot) return;
    const { rank: r, scale } = this.layout;
    const ws = this.ws;
    const u = ws.layers[layer].lora.get(target)!;
    this.mm(rec, [dy, ws.params, ws.lg], { m: T, n: r, k: outDim, transA: false, transB: false, lda: outDim, ldb: r, ldc: r, bOffset: slot.bOffset, accumulate: false });
    if (needInput) {
      this.mm(rec, [ws.lg, ws.params, dx], { m: T, n: inDim, k: r, transA: false, transB: false, lda: r, ldb: inDim, ldc: inDim, bOffset: slot.aOffset, accumulate: true, alpha: scale });
    }
    this.mm(rec, [ws.lg, x, ws.grads], { m: r, n: inDim, k: T, transA: true, transB: false, lda: r, ldb: inDim, ldc: inDim, cOffset: slot.aOffset, accumulate: true, alpha: scale });
    this.mm(rec, [dy, u, ws.grads], { m: outDim, n: r, k: T, transA: true, transB: false, lda: outDim, ldb: r, ldc: r, cOffset: slot.bOffset, accumulate: true, alpha: scale });
  }
}
