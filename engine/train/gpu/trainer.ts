/**
 * LoRA training on the engine's GPU over its frozen, already loaded base model.
 *
 * Design:
 *   - Base weights: every matrix of the engine's packed GPU buffers is dequantized once to f32 when the
 *     trainer is created (base-weights.ts), so one tiled f32 matmul kernel with transpose flags computes
 *     every product: X·Wᵀ forward, dY·W backward, the adapter's dA and dB. Memory: 4 bytes per base weight
 *     (memoryBytes.base), plus the workspace (workspace.ts) sized for `maxTokens` (default 512) tokens per
 *     forward pass: per token and layer about 4·dim + 2·(q + kv width) + 3·ffn floats.
 *   - A step packs the batch's sequences into micro-batches of at most maxTokens tokens (each sequence
 *     whole; attention stays inside its sequence via per-token spans). A micro-batch runs the forward pass
 *     saving its activations (layer inputs, normed inputs and 1/rms, rotated Q and K, V, the attention
 *     output and per-head log-sum-exp, gate, up, SwiGLU output, and x·Aᵀ of each adapter); the
 *     cross-entropy of the counted positions only (their rows of the final norm's output are gathered
 *     before the output head, the largest product of a small model, in chunks that fit one binding), each
 *     chunk's logit gradient going straight back through the head; then the backward pass, adding to the
 *     gradients. Sequences with no counted position are skipped. Loss is the mean over the counted
 *     positions of the whole batch, so the gradient is scaled by 1 / (counted positions of the batch),
 *     known before any GPU work. After the last micro-batch: the squared global gradient norm (a two-pass
 *     reduction), then AdamW with clipping by that norm read on the GPU; only the summed loss and the norm
 *     are read back.
 *   - The math is llama's: RMSNorm (cfg.rmsEps), RoPE with the engine's angles (rope-angle.wgsl, adjacent
 *     pairs or NeoX, partial rotation, linear scaling, frequency factors), causal GQA attention with softmax
 *     recomputed from the saved log-sum-exp in the backward pass, SwiGLU, output norm and head (tied or
 *     separate). No gradient flows into the embeddings; below the first layer only the adapters' own
 *     gradients are computed. Models with biases, Q/K norms, fused matrices, GeGLU or scaled embeddings are
 *     refused.
 *   - Adapters as PEFT: W' = W + (alpha/rank)·B·A, A kaiming-uniform from the seed, B = 0. AdamW with bias
 *     correction and decoupled weight decay on every A and B; global clipping as torch's clip_grad_norm_
 *     (factor min(1, clip / (norm + 1e-6))); the reported norm is before clipping.
 *   - Sharing the device with inference: a micro-batch is recorded as one command buffer per layer, each
 *     submitted inside the engine's scheduler lock (runExclusive), with the thread yielded between them
 *     where submit blocks (Dawn's GL backend on llvmpipe), so a request arriving mid-step waits for one
 *     layer of training. The output head goes a slice of the vocabulary per submit (program.ts), the base
 *     is dequantized and the workspace made a layer at a time with the thread yielded between, and on
 *     llvmpipe the new kernels are compiled in a child process before their first submit (TrainingWarmer),
 *     so no part of training holds a server's thread for long. The trainer's own lock keeps its steps,
 *     evaluations and reads one at a time.
 */
import { yieldToHost } from '../../platform/yield.ts';
import type { WebGpuEngine } from '../../engine.ts';
import type { ModelConfig } from '../../arch/types.ts';
import { encodeLoraAdapter, type LoraMatrix } from '../../lora/adapter-file.ts';
import { DEFAULT_OPTIMIZER, type LoraShape, type LoraTrainer, type OptimizerSettings, type StepResult, type TrainingExample } from '../types.ts';
import { AsyncLock } from '../../generate/lock.ts';
import { NO_ROW } from '../../../kernels/train/gather-rows.ts';
import { ParamArena } from '../../../kernels/runtime/arena.ts';
import { KernelContext } from '../../../kernels/runtime/context.ts';
import type { KernelWarmer, WarmReport } from '../../gpu/select.ts';
import { dequantizeBase, type BaseWeights } from './base-weights.ts';
import { initialParameters, loraLayout, type LoraLayout } from './lora-layout.ts';
import { LOSS_INDEX, NORM_INDEX, TrainProgram } from './program.ts';
import { Recorder } from './recorder.ts';
import { decodeState, encodeState, stateHeader } from './state.ts';
import { TrainWorkspace } from './workspace.ts';

export interface LoraTrainerOptions {
  seed: number;
  optimizer?: Partial<OptimizerSettings>;
  /** Most tokens in one forward pass, and so the longest sequence (default 512). */
  maxTokens?: number;
  /**
   * Most counted positions whose logits are held at once (default: maxTokens, or fewer when maxTokens rows
   * of the vocabulary exceed one GPU binding): bounds the logits buffer for large vocabularies.
   */
  headRows?: number;
}

/**
 * Diagnostics beyond LoraTrainer, for tests: the gradient the last step computed (before clipping, at the
 * parameters the step started from) and the adapter's parameters, in the layout of lora-layout.ts.
 */
export interface LoraTrainerDiagnostics {
  readonly layout: LoraLayout;
  /** GPU memory the trainer holds: the f32 copy of the base model and the workspace. */
  readonly memoryBytes: { base: number; workspace: number };
  readGradients(): Promise<Float32Array>;
  readParameters(): Promise<Float32Array>;
  /** What the device's kernel warmer did each time this trainer handed it new kernels (none where the device has no warmer). */
  readonly warmReports: readonly WarmReport[];
}

/**
 * Hands the kernels a trainer has made since last time to the device's warmer before they are first
 * submitted. On llvmpipe their compile would otherwise run inside submit on the server's thread: for the
 * training kernels of a small model a few seconds in all, for a head of 256 values over a minute, while
 * no request is answered. Where the device has no warmer the kernels compile where they always did.
 */
class TrainingWarmer {
  readonly reports: WarmReport[] = [];
  constructor(
    private readonly ctx: KernelContext,
    private readonly warm: KernelWarmer | undefined,
  ) {
    if (warm) ctx.trackNewKernels();
  }

  async warmNew(): Promise<void> {
    const specs = this.ctx.takeNewKernels();
    if (this.warm && specs.length > 0) this.reports.push(await this.warm(specs, this.ctx.caps));
  }
}

/** A micro-batch's inputs, packed on the CPU. */
interface Packed {
  tokens: number;
  ids: Uint32Array;
  positions: Uint32Array;
  span: Uint32Array;
  /** Counted positions: token index, target token and weight of each. */
  counted: number;
  countedRows: Uint32Array;
  targets: Uint32Array;
  mask: Float32Array;
  /** Per token: its counted row or NO_ROW. */
  rowOf: Uint32Array;
}

export async function createLoraTrainer(engine: WebGpuEngine, shape: LoraShape, opts: LoraTrainerOptions): Promise<LoraTrainer & LoraTrainerDiagnostics> {
  const access = engine.trainingAccess();
  const cfg = access.config;
  checkArchitecture(cfg);
  const maxTokens = opts.maxTokens ?? 512;
  if (!Number.isInteger(maxTokens) || maxTokens < 2) throw new Error(`maxTokens must be an integer of at least 2, got ${opts.maxTokens}`);
  if (!Number.isInteger(opts.seed)) throw new Error(`seed must be an integer, got ${opts.seed}`);
  const optimizer = { ...DEFAULT_OPTIMIZER, ...opts.optimizer };
  checkOptimizer(optimizer);
  const layout = loraLayout(cfg, shape);
  const ctx = new KernelContext(access.device.device, access.device.caps);
  const warmer = new TrainingWarmer(ctx, access.device.warmKernels);
  const base = await dequantizeBase(ctx, cfg, access.weights, async (cb) => {
    await warmer.warmNew();
    await access.runExclusive(async () => {
      ctx.device.queue.submit([cb]);
      await ctx.device.queue.onSubmittedWorkDone();
    });
  });
  let ws: TrainWorkspace | undefined;
  try {
    if (opts.headRows !== undefined && !(Number.isInteger(opts.headRows) && opts.headRows >= 1)) throw new Error(`headRows must be a positive integer, got ${opts.headRows}`);
    ws = await TrainWorkspace.create(ctx, cfg, layout, maxTokens, opts.headRows);
    const program = new TrainProgram(ctx, cfg, base, layout, ws);
    ctx.device.queue.writeBuffer(ws.params, 0, initialParameters(layout, opts.seed));
    return new GpuLoraTrainer(ctx, cfg, { rank: shape.rank, alpha: shape.alpha, targets: [...shape.targets] }, layout, base, ws, program, optimizer, access.runExclusive, access.device.blockingSubmit, warmer);
  } catch (e) {
    ws?.destroy();
    for (const b of base.owned) b.destroy();
    throw e;
  }
}

function checkArchitecture(cfg: ModelConfig): void {
  const b = cfg.block;
  const unsupported = [
    b.qkvBias && 'Q/K/V biases',
    b.qkNorm && 'Q/K norms',
    b.fusedQkv && 'a fused QKV matrix',
    b.fusedGateUp && 'a fused gate/up matrix',
    b.activation !== 'silu' && `the ${b.activation} activation`,
    cfg.embedScale !== 1 && 'scaled embeddings',
  ].filter((x): x is string => typeof x === 'string');
  if (unsupported.length > 0) throw new Error(`LoRA training supports llama-style blocks; ${cfg.architecture} has ${unsupported.join(', ')}`);
}

function checkOptimizer(o: OptimizerSettings): void {
  const bad = (name: string, v: number) => new Error(`optimizer ${name} must be ${name.startsWith('beta') ? 'in [0, 1)' : 'a non-negative number'}, got ${v}`);
  if (!(o.beta1 >= 0 && o.beta1 < 1)) throw bad('beta1', o.beta1);
  if (!(o.beta2 >= 0 && o.beta2 < 1)) throw bad('beta2', o.beta2);
  if (!(o.epsilon > 0)) throw new Error(`optimizer epsilon must be positive, got ${o.epsilon}`);
  if (!(o.weightDecay >= 0)) throw bad('weightDecay', o.weightDecay);
  if (!(o.clipNorm >= 0)) throw bad('clipNorm', o.clipNorm);
}

class GpuLoraTrainer implements LoraTrainer, LoraTrainerDiagnostics {
  private steps = 0;
  private destroyed = false;
  /** One operation at a time on the workspace (a step, an evaluation, a read, a state load). */
  private readonly own = new AsyncLock();
  private readonly arena: ParamArena;

  constructor(
    private readonly ctx: KernelContext,
    private readonly cfg: ModelConfig,
    readonly shape: LoraShape,
    readonly layout: LoraLayout,
    private readonly base: BaseWeights,
    private readonly ws: TrainWorkspace,
    private readonly program: TrainProgram,
    private readonly optimizer: OptimizerSettings,
    private readonly runExclusive: <T>(fn: () => Promise<T>) => Promise<T>,
    private readonly blockingSubmit: boolean,
    private readonly warmer: TrainingWarmer,
  ) {
    this.arena = new ParamArena(ctx, program.maxDispatches);
  }

  get warmReports(): readonly WarmReport[] {
    return this.warmer.reports;
  }

  get memoryBytes(): { base: number; workspace: number } {
    return { base: this.base.bytes, workspace: this.ws.bytes + this.arena.buffer.size };
  }

  get parameterCount(): number {
    return this.layout.parameterCount;
  }

  get stepsTaken(): number {
    return this.steps;
  }

  async step(batch: readonly TrainingExample[], learningRate: number): Promise<StepResult> {
    this.live();
    if (!(Number.isFinite(learningRate) && learningRate >= 0)) throw new Error(`learning rate must be a non-negative number, got ${learningRate}`);
    const { micro, counted } = this.pack(batch, 'batch');
    if (counted === 0) throw new Error('the batch has no counted positions (lossMask is all 0): nothing to learn from');
    const [lossSum, normSq] = await this.own.run(async () => {
      // Counted inside the lock: steps called together are taken one after another, each its own step.
      const step = this.steps + 1;
      for (let i = 0; i < micro.length; i++) {
        const mb = micro[i];
        this.upload(mb);
        const rec = new Recorder(this.ctx, this.arena);
        if (i === 0) {
          rec.clear(this.ws.grads);
          rec.clear(this.ws.scalars);
        }
        this.program.forward(rec, mb.tokens, mb.counted, 1 / counted, true);
        this.program.backward(rec, mb.tokens);
        if (i === micro.length - 1) {
          this.program.update(rec, learningRate, step, this.optimizer);
          rec.copy(this.ws.scalars, this.ws.readback, 16);
        }
        await this.submit(rec.finish());
      }
      const scalars = await this.readScalars();
      this.steps = step;
      return scalars;
    });
    return { loss: lossSum / counted, tokens: counted, gradNorm: Math.sqrt(normSq) };
  }

  async evaluate(examples: readonly TrainingExample[]): Promise<{ loss: number; tokens: number }> {
    this.live();
    const { micro, counted } = this.pack(examples, 'examples');
    if (counted === 0) return { loss: 0, tokens: 0 };
    const [lossSum] = await this.own.run(async () => {
      for (let i = 0; i < micro.length; i++) {
        const mb = micro[i];
        this.upload(mb);
        const rec = new Recorder(this.ctx, this.arena);
        if (i === 0) rec.clear(this.ws.scalars);
        this.program.forward(rec, mb.tokens, mb.counted, 1 / counted, false);
        if (i === micro.length - 1) rec.copy(this.ws.scalars, this.ws.readback, 16);
        await this.submit(rec.finish());
      }
      return this.readScalars();
    });
    return { loss: lossSum / counted, tokens: counted };
  }

  /**
   * Submits a micro-batch's command buffers one at a time, each inside the engine's lock, so an inference
   * step waits for at most one layer of training. Where submit runs the work on this thread (Dawn's GL
   * backend on llvmpipe), the thread is also handed back between them, as the engine's own steps do.
   */
  private async submit(buffers: GPUCommandBuffer[]): Promise<void> {
    // Kernels made while recording (the matrix products' variants are made on first use) are compiled
    // before the first submit that runs them, off this thread where the device can (TrainingWarmer).
    await this.warmer.warmNew();
    for (const cb of buffers) {
      await this.runExclusive(async () => this.ctx.device.queue.submit([cb]));
      if (this.blockingSubmit) await yieldToHost();
    }
  }

  readGradients(): Promise<Float32Array> {
    this.live();
    return this.read(this.ws.grads);
  }

  readParameters(): Promise<Float32Array> {
    this.live();
    return this.read(this.ws.params);
  }

  async exportAdapter(metadata: Readonly<Record<string, string>> = {}): Promise<Uint8Array> {
    this.live();
    const p = await this.read(this.ws.params);
    const matrices: LoraMatrix[] = this.layout.slots.map((s) => ({
      layer: s.layer,
      target: s.target,
      inDim: s.inDim,
      outDim: s.outDim,
      rank: this.layout.rank,
      a: p.slice(s.aOffset, s.aOffset + this.layout.rank * s.inDim),
      b: p.slice(s.bOffset, s.bOffset + s.outDim * this.layout.rank),
    }));
    return encodeLoraAdapter({ architecture: this.cfg.architecture, alpha: this.shape.alpha, matrices, metadata: { ...metadata } });
  }

  async saveState(): Promise<Uint8Array> {
    this.live();
    const [params, m, v] = [await this.read(this.ws.params), await this.read(this.ws.m), await this.read(this.ws.v)];
    return encodeState({ header: stateHeader(this.cfg.architecture, this.shape.alpha, this.layout, this.steps), params, m, v });
  }

  async loadState(state: Uint8Array): Promise<void> {
    this.live();
    const s = decodeState(state, stateHeader(this.cfg.architecture, this.shape.alpha, this.layout, this.steps));
    await this.own.run(async () => {
      const q = this.ctx.device.queue;
      q.writeBuffer(this.ws.params, 0, s.params);
      q.writeBuffer(this.ws.m, 0, s.m);
      q.writeBuffer(this.ws.v, 0, s.v);
      await q.onSubmittedWorkDone();
    });
    this.steps = s.header.step;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.ws.destroy();
    this.arena.buffer.destroy();
    for (const b of this.base.owned) b.destroy();
  }

  private live(): void {
    if (this.destroyed) throw new Error('LoRA trainer has been destroyed');
  }

  /** Checks the examples and packs them, whole, into micro-batches of at most maxTokens tokens. */
  private pack(examples: readonly TrainingExample[], what: string): { micro: Packed[]; counted: number } {
    if (examples.length === 0) throw new Error(`${what} is empty`);
    const max = this.ws.maxTokens;
    const V = this.cfg.vocabSize;
    const groups: TrainingExample[][] = [];
    let current: TrainingExample[] = [];
    let used = 0;
    let counted = 0;
    examples.forEach((ex, i) => {
      const n = ex.tokens.length;
      if (n < 1 || n > max) throw new Error(`${what}[${i}] has ${n} tokens; the trainer takes 1..${max} (maxTokens)`);
      if (ex.lossMask.length !== n) throw new Error(`${what}[${i}]: lossMask has ${ex.lossMask.length} entries for ${n} tokens`);
      let mine = 0;
      for (let t = 0; t < n; t++) {
        const id = ex.tokens[t];
        if (!(id >= 0 && id < V)) throw new Error(`${what}[${i}].tokens[${t}] = ${id} is not a token id (0..${V - 1})`);
        if (t < n - 1 && ex.lossMask[t]) mine++;
      }
      // A sequence with nothing counted adds nothing to the loss or the gradient: skip its work.
      if (mine === 0) return;
      counted += mine;
      if (used + n > max && current.length > 0) {
        groups.push(current);
        current = [];
        used = 0;
      }
      current.push(ex);
      used += n;
    });
    if (current.length > 0) groups.push(current);
    const micro = groups.map((g): Packed => {
      const T = g.reduce((s, e) => s + e.tokens.length, 0);
      const p: Packed = {
        tokens: T,
        ids: new Uint32Array(T),
        positions: new Uint32Array(T),
        span: new Uint32Array(2 * T),
        counted: 0,
        countedRows: new Uint32Array(T),
        targets: new Uint32Array(T),
        mask: new Float32Array(T),
        rowOf: new Uint32Array(T).fill(NO_ROW),
      };
      let start = 0;
      for (const ex of g) {
        const n = ex.tokens.length;
        for (let t = 0; t < n; t++) {
          const at = start + t;
          p.ids[at] = ex.tokens[t];
          p.positions[at] = t;
          p.span[2 * at] = start;
          p.span[2 * at + 1] = start + n;
          if (t < n - 1 && ex.lossMask[t]) {
            const r = p.counted++;
            p.countedRows[r] = at;
            p.targets[r] = ex.tokens[t + 1];
            p.mask[r] = 1;
            p.rowOf[at] = r;
          }
        }
        start += n;
      }
      return p;
    });
    return { micro, counted };
  }

  private upload(p: Packed): void {
    const q = this.ctx.device.queue;
    q.writeBuffer(this.ws.ids, 0, p.ids);
    q.writeBuffer(this.ws.positions, 0, p.positions);
    q.writeBuffer(this.ws.span, 0, p.span);
    q.writeBuffer(this.ws.countedRows, 0, p.countedRows);
    q.writeBuffer(this.ws.targets, 0, p.targets);
    q.writeBuffer(this.ws.mask, 0, p.mask);
    q.writeBuffer(this.ws.rowOf, 0, p.rowOf);
  }

  private async readScalars(): Promise<[number, number]> {
    const rb = this.ws.readback;
    await rb.mapAsync(GPUMapMode.READ);
    const f = new Float32Array(rb.getMappedRange().slice(0));
    rb.unmap();
    return [f[LOSS_INDEX], f[NORM_INDEX]];
  }

  private async read(buffer: GPUBuffer): Promise<Float32Array> {
    const n = this.layout.parameterCount;
    return this.own.run(async () => {
      const staging = this.ctx.device.createBuffer({ label: 'train.read', size: Math.ceil((n * 4) / 16) * 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      try {
        const enc = this.ctx.device.createCommandEncoder();
        enc.copyBufferToBuffer(buffer, 0, staging, 0, staging.size);
        this.ctx.device.queue.submit([enc.finish()]);
        await staging.mapAsync(GPUMapMode.READ);
        return new Float32Array(staging.getMappedRange().slice(0, n * 4));
      } finally {
        staging.destroy();
      }
    });
  }
}
