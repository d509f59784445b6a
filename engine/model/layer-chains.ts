/**
 * Decode steps on llvmpipe run each layer's O, gate|up and down products with their tails in one
 * dispatch (kernels/ffn-chain.ts), two fewer a layer, and its Q|K|V product with attention in another
 * (kernels/qkv-chain.ts), one fewer: on llvmpipe a dispatch costs 25-60 µs, nearly all
 * of it waking the compute threads, and a step of a 30-layer model was 156 of them. The chain's workgroups
 * meet at grid barriers, one workgroup to each of llvmpipe's threads, which the engine has pinned one to
 * a CPU (engine/platform/worker-pinning.ts): only then are they all running at once.
 *
 * A barrier that waits too long (a thread kept off its CPU by the rest of the machine) gives up and counts
 * itself; the step's readback carries the count, and a step with one is run again one dispatch a product
 * (the same bits: the chain is the three dispatches' kernels), with chains off for the next
 * BACKOFF_STEPS steps. Every input of a step is in place until the next one begins, and the step rewrites
 * all it writes (the residual stream from the embedding, the KV rows of its positions, its samples), so
 * the second run is the step's own. Steps that follow one still unread (pipelined decode) take no chain.
 */
import type { ModelConfig } from '../arch/types.ts';
import type { AttentionParams } from '../../kernels/attention.ts';
import { chainGridBytes, MIN_SPIN_PASSES, spinPassesLeft } from '../../kernels/chain.ts';
import { chainPhaseWords, chainSpinPasses, FfnChainKernel, type FfnChainShape } from '../../kernels/ffn-chain.ts';
import type { RopeTail } from '../../kernels/matvec-tail.ts';
import { qkvChainLoopPasses, qkvChainPhaseWords, QkvChainKernel, type QkvChainShape } from '../../kernels/qkv-chain.ts';
import type { XqMode } from '../../kernels/quantize-x.ts';
import { q8RowVec4s } from '../../kernels/quantize-x.ts';
import type { ParamArena } from '../../kernels/runtime/arena.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import type { WeightMatrix } from './matrix.ts';

/** A layer whose FFN can run as a chain: its three products (one shard each, no bias) and norms. */
export interface FfnChainLayer {
  o: WeightMatrix;
  gateUp: WeightMatrix;
  down: WeightMatrix;
  ffnNorm: GPUBuffer;
  /** The next layer's attention norm weight, which the down product's tail applies. */
  nextNorm: GPUBuffer;
  modes: FfnChainShape['modes'];
}

/** A layer whose stacked Q|K|V product (one shard, no bias, RoPE tail) and attention can run as a chain. */
export interface QkvChainLayer {
  qkv: WeightMatrix;
  kCache: GPUBuffer;
  vCache: GPUBuffer;
}

export interface ChainLayer {
  ffn?: FfnChainLayer;
  qkv?: QkvChainLayer;
}

/** The step's buffers the chains read and write (the transformer's). */
export interface ChainBuffers {
  attnQ8: GPUBuffer;
  x: GPUBuffer;
  counters: GPUBuffer;
  xNormQ8: GPUBuffer;
  gateUp: GPUBuffer;
  actQ8: GPUBuffer;
  qkv: GPUBuffer;
  positions: GPUBuffer;
  tokenSeq: GPUBuffer;
  pageTable: GPUBuffer;
  factors: GPUBuffer;
  /** The serial split attention's partial sums and counters, where the engine splits (else no split chain). */
  split?: { partials: GPUBuffer; counters: GPUBuffer };
}

/** What the QKV chains need of the model beyond ModelConfig: the RoPE tail's shape and the cache's longest sequence. */
export interface QkvChainModel {
  rope: RopeTail;
  qkvStride: number;
  maxPositions: number;
}

/** Steps with chains off after a barrier gave up: a loaded machine, where waiting is likely again. */
export const BACKOFF_STEPS = 64;

type QkvPlan = { unsplit: { group: GPUBindGroup; kernels: QkvChainKernel[] }; split?: { group: GPUBindGroup; kernels: QkvChainKernel[] } };

export class LayerChains {
  private readonly ffnPlans: ({ group: GPUBindGroup; kernels: FfnChainKernel[] } | undefined)[];
  private readonly qkvPlans: (QkvPlan | undefined)[];
  private readonly grid: GPUBuffer;
  private readonly phases: GPUBuffer;
  private readonly qkvPhases: GPUBuffer;
  private readonly reads: [GPUBuffer, GPUBuffer];
  private readonly zero: Uint32Array;
  /** The step's chains so far: the next one's arrival word (chain-grid.wgsl). */
  private slots = 0;
  private used = 0;
  private allowed = true;
  private backoff = 0;
  /** Steps run again one dispatch a kernel because a barrier gave up (for stats and tests). */
  retries = 0;

  constructor(
    ctx: KernelContext,
    cfg: ModelConfig,
    model: QkvChainModel,
    layers: readonly ChainLayer[],
    buffers: ChainBuffers,
    /** llvmpipe's compute threads, each pinned to its own CPU. */
    readonly workers: number,
    /** Rows of x a step may have for its layers to take chains (the tails' limit). */
    readonly upTo: number,
    spinBudget?: number,
  ) {
    const shapeOf = (L: FfnChainLayer): FfnChainShape => ({
      dim: cfg.dim,
      qDim: cfg.nHeads * cfg.headDim,
      ffn: cfg.ffnDim,
      types: { o: L.o.type, gateUp: L.gateUp.type, down: L.down.type },
      modes: L.modes,
      activation: cfg.block.activation,
      eps: cfg.rmsEps,
    });
    // The products' params depend on the model's widths only: one table for every layer.
    const strides = { x: cfg.dim, xq: q8RowVec4s };
    const first = layers.find((L) => L.ffn !== undefined)?.ffn;
    const words = first ? chainPhaseWords(ctx, shapeOf(first), upTo, strides) : new Uint32Array(4);
    this.phases = ctx.storage('chain.phases', words.byteLength, words);
    const r = model.rope;
    const qkvRows = (r.heads + 2 * r.kvHeads) * r.headDim;
    const qkvWords = qkvChainPhaseWords(ctx, (t) => ({ t, n: qkvRows, k: cfg.dim, xStride: q8RowVec4s(cfg.dim), yStride: model.qkvStride, tail: { n: qkvRows, inOffset: 0, inStride: model.qkvStride, rope: r } }), upTo);
    this.qkvPhases = ctx.storage('chain.qkv-phases', qkvWords.byteLength, qkvWords);
    // Two chains a layer at most.
    this.grid = ctx.storage('chain.grid', chainGridBytes(2 * layers.length));
    this.zero = new Uint32Array(this.grid.size / 4);
    const read = (label: string) => ctx.device.createBuffer({ label, size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    this.reads = [read('read.chain.0'), read('read.chain.1')];
    const built = new Map<string, FfnChainKernel[] | undefined>();
    // A shape whose products would leave its barriers too little of llvmpipe's loop budget has none.
    const kernelsFor = (shape: FfnChainShape) => {
      const key = JSON.stringify({ ...shape.types, ...shape.modes });
      if (!built.has(key)) {
        const fits = Array.from({ length: upTo }, (_, i) => chainSpinPasses(ctx, shape, i + 1, workers) >= MIN_SPIN_PASSES).every(Boolean);
        built.set(key, fits ? Array.from({ length: upTo }, (_, i) => new FfnChainKernel(ctx, shape, i + 1, workers, spinBudget)) : undefined);
      }
      return built.get(key);
    };
    this.ffnPlans = layers.map(({ ffn: L }) => {
      if (!L) return undefined;
      const kernels = kernelsFor(shapeOf(L));
      if (!kernels) return undefined;
      const store = (m: WeightMatrix) => m.shards[0].store;
      const group = kernels[0].bind({ o: store(L.o), gateUp: store(L.gateUp), down: store(L.down), attnQ8: buffers.attnQ8, x: buffers.x, counters: buffers.counters, ffnNorm: L.ffnNorm, xNormQ8: buffers.xNormQ8, gateUpOut: buffers.gateUp, actQ8: buffers.actQ8, nextNorm: L.nextNorm, phases: this.phases, grid: this.grid });
      return { group, kernels };
    });
    const qkvBuilt = new Map<string, QkvChainKernel[] | undefined>();
    const qkvKernelsFor = (shape: QkvChainShape, split: boolean) => {
      const key = `${shape.type}/${split}`;
      if (!qkvBuilt.has(key)) {
        const fits = Array.from({ length: upTo }, (_, i) => spinPassesLeft(ctx, qkvChainLoopPasses(ctx, shape, i + 1, workers, split)) >= MIN_SPIN_PASSES).every(Boolean);
        qkvBuilt.set(key, fits ? Array.from({ length: upTo }, (_, i) => new QkvChainKernel(ctx, shape, i + 1, workers, split, spinBudget)) : undefined);
      }
      return qkvBuilt.get(key);
    };
    const dummy = buffers.split ?? { partials: buffers.counters, counters: buffers.counters };
    this.qkvPlans = layers.map(({ qkv: L }) => {
      if (!L) return undefined;
      const shape: QkvChainShape = { dim: cfg.dim, type: L.qkv.type, rope: r, maxPositions: model.maxPositions };
      const unsplit = qkvKernelsFor(shape, false);
      if (!unsplit) return undefined;
      const split = buffers.split ? qkvKernelsFor(shape, true) : undefined;
      const bind = (ks: QkvChainKernel[]) => ks[0].bind({ qkv: L.qkv.shards[0].store, xNormQ8: buffers.xNormQ8, qkvOut: buffers.qkv, counters: buffers.counters, positions: buffers.positions, tokenSeq: buffers.tokenSeq, pageTable: buffers.pageTable, factors: buffers.factors, kCache: L.kCache, vCache: L.vCache, attnQ8: buffers.attnQ8, phases: this.qkvPhases, grid: this.grid, partials: dummy.partials, splitCounters: dummy.counters });
      return { unsplit: { group: bind(unsplit), kernels: unsplit }, split: split && { group: bind(split), kernels: split } };
    });
  }

  /** The chains of `layers`, or undefined where none of them can have one. */
  static tryBuild(ctx: KernelContext, cfg: ModelConfig, model: QkvChainModel, layers: readonly ChainLayer[], buffers: ChainBuffers, workers: number, upTo: number, spinBudget?: number): LayerChains | undefined {
    const chains = new LayerChains(ctx, cfg, model, layers, buffers, workers, upTo, spinBudget);
    if (chains.ffnLayers + chains.qkvLayers > 0) return chains;
    chains.destroy();
    return undefined;
  }

  /** Layers whose FFN has a chain. */
  get ffnLayers(): number {
    return this.ffnPlans.filter((p) => p !== undefined).length;
  }

  /** Layers whose Q|K|V product and attention have a chain. */
  get qkvLayers(): number {
    return this.qkvPlans.filter((p) => p !== undefined).length;
  }

  /** A step begins encoding; `allowed`: it may take chains (no step before it waits to be read, none retried). */
  beginStep(allowed: boolean): void {
    this.used = 0;
    this.slots = 0;
    if (this.backoff > 0) this.backoff--;
    this.allowed = allowed && this.backoff === 0;
  }

  /** Encodes layer `l`'s FFN chain for `t` rows of x where it has one and the step may; false where the caller encodes the products. */
  encodeFfn(pass: GPUComputePassEncoder, arena: ParamArena, l: number, t: number): boolean {
    const plan = this.ffnPlans[l];
    if (!plan || !this.allowed || t > this.upTo) return false;
    plan.kernels[t - 1].encode(pass, arena, plan.group, this.slots++);
    this.used++;
    return true;
  }

  private qkvVariant(l: number, t: number, splits: number) {
    const plan = this.qkvPlans[l];
    return this.allowed && t <= this.upTo ? (splits > 1 ? plan?.split : plan?.unsplit) : undefined;
  }

  /** Whether this step's layer `l` takes its Q|K|V chain for `t` rows of x and attention in `splits` splits. */
  takesQkv(l: number, t: number, splits: number): boolean {
    return this.qkvVariant(l, t, splits) !== undefined;
  }

  /**
   * Encodes layer `l`'s Q|K|V product and `attention` (the engine's params for the step) as one chain,
   * where it has one for the attention's split and the step may; false where the caller encodes them.
   */
  encodeQkv(pass: GPUComputePassEncoder, arena: ParamArena, l: number, t: number, attention: AttentionParams): boolean {
    const variant = this.qkvVariant(l, t, attention.splits ?? 1);
    if (!variant) return false;
    variant.kernels[t - 1].encode(pass, arena, variant.group, this.slots++, attention);
    this.used++;
    return true;
  }

  /** Whether the step being encoded took a chain. */
  get anyUsed(): boolean {
    return this.used > 0;
  }

  /** Before the step's commands: its barriers count from zero. */
  upload(queue: GPUQueue): void {
    queue.writeBuffer(this.grid, 0, this.zero);
  }

  /** After the step's commands (where it took a chain): its barrier words into readback `i`. */
  encodeRead(enc: GPUCommandEncoder, i: number): void {
    enc.copyBufferToBuffer(this.grid, 0, this.reads[i], 0, 16);
  }

  /** Whether a barrier of the step read back into `i` gave up; if so, chains are off for a while. */
  async failed(i: number): Promise<boolean> {
    const b = this.reads[i];
    await b.mapAsync(GPUMapMode.READ);
    const gaveUp = new Uint32Array(b.getMappedRange())[1];
    b.unmap();
    if (gaveUp === 0) return false;
    this.backoff = BACKOFF_STEPS;
    this.retries++;
    return true;
  }

  destroy(): void {
    for (const b of [this.grid, this.phases, this.qkvPhases, ...this.reads]) b.destroy();
  }
}
