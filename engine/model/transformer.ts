/**
 * The forward pass of a llama-like decoder over a flattened batch of tokens from several sequences, plus
 * GPU sampling of the requested rows. A step is one compute pass in one command buffer, one upload of
 * parameters and inputs, and one small readback of the sampled tokens; nothing is allocated per token.
 */
import { AttentionKernel, SERIAL_SPLIT_FROM, tiledWorkgroups } from '../../kernels/attention.ts';
import { RmsNormKernel } from '../../kernels/rmsnorm.ts';
import { xq8Buffer } from '../../kernels/matmul-x-window.ts';
import { RopeKvStoreKernel } from '../../kernels/rope-kv-store.ts';
import { ParamArena, type DispatchRecord } from '../../kernels/runtime/arena.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { PenaltiesKernel, writePenaltyEntry, writePenaltyRow, PENALTY_ENTRY_BYTES, PENALTY_ROW_BYTES } from '../../kernels/sampling/penalties.ts';
import { SampleKernel, writeSampleRow, SAMPLE_ROW_BYTES, SAMPLE_OUT_WORDS, type SampleGroups } from '../../kernels/sampling/sample.ts';
import { readTopKRow, TopKKernel, TOPK_ROW_WORDS, type TopKRow } from '../../kernels/sampling/topk.ts';
import { SwiGluKernel } from '../../kernels/swiglu.ts';
import { MAX_MATVEC_T } from '../../kernels/matvec.ts';
import { LORA_NO_ADAPTER } from '../../kernels/lora.ts';
import type { LoraPool } from '../lora/pool.ts';
import { LoraLayers } from './lora-layers.ts';
import { SegmentPlanner } from './segment-planner.ts';
import { KvMirror, type KvMirrorOptions, type MirrorPlan } from '../kv/kv-mirror.ts';
import { KeepRowsKernel } from '../../kernels/keep-rows.ts';
import type { ModelConfig } from '../arch/types.ts';
import type { SampleRowSpec, StepRunner, SubmittedStep } from '../generate/step.ts';
import type { PagedKvCache } from '../kv/paged-cache.ts';
import type { BoundProduct, MatrixIo, MatrixKernels, WeightMatrix } from './matrix.ts';
import type { LayerWeights, ModelWeights } from './weights.ts';
import { MAX_PENALTY_ENTRIES, Workspace } from './workspace.ts';
import { q8RowVec4s, type XqMode } from '../../kernels/quantize-x.ts';
import { ropeTailFits, tailCounterWords, type RopeTail } from '../../kernels/matvec-tail.ts';
import { memoize } from '../../kernels/runtime/memo.ts';
import { LayerChains, type ChainLayer, type FfnChainLayer, type QkvChainLayer } from './layer-chains.ts';
import { CPU_MATVEC_UP_TO } from '../../kernels/matmul-select.ts';

/**
 * EngineOptions.splitAttentionFrom's default on GPUs: the span from which a step's attention splits
 * positions, by the bytes of weights a layer holds. (Below 256 a pair's workgroup is short.) The split
 * adds a combine dispatch a layer, which a step bound by the host's encoding pays in full, and small
 * models' steps are: on an H200, SmolLM2-135M (4.8 MB of Q8_0 weights a layer, the host 2.1 ms a step
 * against 0.7 of kernels) decoded at 512 positions at 379-385 tok/s whole against 335-341 split
 * (session 16: 451-478 against 449-454), where Llama-3.2-1B (80 MB a layer) gained, 545-567 against 495;
 * from 2048 positions the walk itself dominates and both gain (after 4096 tokens SmolLM2 266-342 split
 * against 128 whole, the 1B 455-467 against 98-202).
 */
export function gpuSplitAttentionFrom(layerWeightBytes: number): number {
  return layerWeightBytes >= SPLIT_FROM_LAYER_BYTES ? 256 : 2048;
}
const SPLIT_FROM_LAYER_BYTES = 16 * 2 ** 20;

/**
 * A step's attention walks tiles of consecutive tokens (AttentionParams.tiled, GPU kernels) from this
 * many tokens, where its sequences average at least TILED_ATTENTION_RUN tokens each (prefill): a tile
 * stages each position's K and V once for its tokens; a tile of one token a sequence would not.
 */
const TILED_ATTENTION_MIN_TOKENS = 16;
const TILED_ATTENTION_RUN = 8;
/**
 * CPU rasterisers' attention takes two tokens an invocation (AttentionParams.tokenPairs) where a step's
 * sequences average at least this many tokens each: a pair within one sequence shares its K and V
 * loads, one straddling two walks both (a decode step of many sequences would be all such pairs).
 */
const PAIRED_ATTENTION_RUN = 4;
/**
 * EngineOptions.tiledAttentionMinWorkgroups' default: a step tiles attention where its tiles (of
 * tokens x KV heads) make at least this many workgroups. On an H200 (132 cores), TTFT of a 1023-token
 * prompt in 512-token steps: Llama-3.2-1B (8 KV heads, 256 tiles a step) 80.6 ms tiled, 82.1 untiled;
 * SmolLM2-135M (3 KV heads, 96 tiles) 60.3 tiled, 41.5 untiled (its tiled attention 52% of the step).
 */
const TILED_ATTENTION_MIN_WORKGROUPS = 256;

interface LayerPlan {
  attnNorm: GPUBindGroup;
  qkv: BoundProduct[];
  /** Per-head Q/K norm, in place in the qkv rows (qwen3). */
  qkNorm: GPUBindGroup | undefined;
  /** RoPE on Q and K and the KV-cache store, one dispatch. */
  ropeStore: GPUBindGroup;
  attention: GPUBindGroup;
  /**
   * Attention that rotates Q and K and stores K and V itself (AttentionParams.rope), for steps where each
   * token is its sequence's only new one: no RoPE/KV-store pass. Where the adapter's kernel can (GPUs).
   */
  attentionRope?: GPUBindGroup;
  /** `attention` and `attentionRope` writing split positions' partial sums (AttentionParams.splits; GPUs). */
  split?: { attention: GPUBindGroup; attentionRope?: GPUBindGroup };
  /** `attention` and `quantizedO.attention` splitting positions on a CPU rasteriser (attention-serial-split.wgsl). */
  serialSplit?: { attention: GPUBindGroup; quantized: GPUBindGroup | undefined };
  o: BoundProduct;
  /**
   * Where the O product reads quantized x in 32-value blocks and heads are whole blocks: attention writes
   * its output quantized (AttentionKernel 'q8_0') into the buffer this product reads, with no quantize
   * pass between them. `attention` and `o` above serve steps whose adapters adapt O (LoRA's A reads f32).
   */
  quantizedO?: { attention: GPUBindGroup; o: BoundProduct; out: GPUBuffer };
  ffnNorm: GPUBindGroup;
  gateUp: BoundProduct[];
  /**
   * The QKV and gate|up products reading the residual stream with their RMSNorm folded in, for steps of
   * up to `fuseNormUpTo` tokens on devices whose products can (MatrixKernels.fuseNormUpTo); such a step
   * skips both norm passes.
   */
  normed?: { qkv: BoundProduct[]; gateUp: BoundProduct[] };
  /**
   * Where the products read quantized x (MatrixKernels.quantizedX: Q8_0, Q4_0, Q4_K, Q6_K on CPU
   * rasterisers, all in one mode): the norm pass writes its rows as int8 blocks (RmsNormKernel 'q8') and
   * the products read those, a third of the loads of f32 x, with no quantize pass of their own.
   */
  quantized?: { qkv?: NormedProducts; gateUp?: NormedProducts };
  /** The gated activation as its own pass; absent where the down product applies it as it reads x. */
  swiglu?: GPUBindGroup;
  down: BoundProduct;
  /**
   * Where the down product folds the gated activation in: the activation as its own pass into act and a
   * plain down product over it, for steps with adapter rows (LoRA's A must read the activated hidden
   * state the down product sees). Made when adapters are enabled.
   */
  unfusedDown?: { swiglu: GPUBindGroup; down: BoundProduct };
  /** Where the down product reads quantized x: the activation pass writes int8 blocks (SwiGluKernel 'q8'). */
  quantizedDown?: { kernel: SwiGluKernel; swiglu: GPUBindGroup; down: BoundProduct };
}

interface NormedProducts {
  kernel: RmsNormKernel;
  norm: GPUBindGroup;
  products: BoundProduct[];
}

export class Transformer implements StepRunner {
  readonly ws: Workspace;
  private readonly arena: ParamArena;
  private readonly k: {
    rmsnorm: RmsNormKernel;
    qkNorm: RmsNormKernel | undefined;
    ropeStore: RopeKvStoreKernel;
    attention: AttentionKernel;
    swiglu: SwiGluKernel;
    /** The output norm of the rows to sample, picked from the step's tokens in the same pass. */
    headNorm: RmsNormKernel;
    sample: SampleKernel;
    topk: TopKKernel;
    penalties: PenaltiesKernel;
    keepRows: KeepRowsKernel;
  };
  /** KeepRowsKernel's bindings: the step's sampled-row indices, QKV rows, residual stream, positions, slots. */
  private readonly keepRowsGroup: GPUBindGroup;
  /**
   * The last layer past its KV store runs on the sampled rows only, as llama.cpp's does (a step with fewer
   * sampled rows than tokens, no adapter): a 64-token prompt skips 63 rows of one layer's attention, O
   * and FFN. Off only to compare (tests).
   */
  pruneLastLayer = true;
  private readonly layers: LayerPlan[];
  private readonly embed: BoundProduct;
  /** Heads, paging and rotation of the RoPE + KV-store pass and of the QKV products' tail. */
  private readonly rope: RopeTail;
  /** The counters of the products' tails (MatrixIo.tail), shared: a step's dispatches run in order. */
  private readonly tailCounter: GPUBuffer | undefined;
  /** Each layer's FFN, and its Q|K|V product with attention, in one dispatch each in decode steps on llvmpipe (layer-chains.ts), where the layer's products take their tails. */
  readonly chains: LayerChains | undefined;
  /**
   * Whether steps may take chains: not while decode is pipelined (the engine sets it with the scheduler's
   * pipeline), since a step whose chain gave up is run again, and a step already submitted after it
   * would have read its samples.
   */
  chainsAllowed = true;
  /** The last submitted step took a chain and is not read yet. */
  private chainedUnread = false;
  /** Long steps' K and V for attention, mirrored in textures (llvmpipe: engine/kv/kv-mirror.ts). */
  private readonly kvMirror: KvMirror | undefined;
  private readonly head: { normKernel: RmsNormKernel; norm: GPUBindGroup; product: BoundProduct; normed: BoundProduct | undefined; sample: SampleGroups; topk: GPUBindGroup; penalties: GPUBindGroup };
  // CPU mirrors of the step inputs, allocated once.
  private readonly tokens: Uint32Array;
  private readonly positions: Uint32Array;
  private readonly slots: Uint32Array;
  /**
   * Whether two of the step's tokens belong to one sequence (a prompt chunk): then every token's K and V
   * must be in the cache before attention, so the RoPE/KV-store pass runs. slotStamps[slot] holds the
   * stepStamp of the last step that added a token of that slot.
   */
  private sharedSlot = false;
  private slotStamps = new Uint32Array(16);
  private stepStamp = 1;
  private readonly tokenAdapter: Uint32Array;
  private readonly lastIndex: Uint32Array;
  private readonly settingsU32: Uint32Array;
  private readonly settingsF32: Float32Array;
  private readonly mask: Uint32Array;
  private readonly penRowsU32: Uint32Array;
  private readonly penRowsF32: Float32Array;
  private readonly penEntries: Uint32Array;
  private readonly sampledU32: Uint32Array;
  private readonly sampledF32: Float32Array;
  private readonly topkU32: Uint32Array;
  private readonly topkF32: Float32Array;
  private nTokens = 0;
  private nRows = 0;
  private nEntries = 0;
  private anyMask = false;
  private anyPenalty = false;
  private anyCandidates = false;
  /** A token of this step uses a LoRA adapter. */
  private anyAdapter = false;
  /** Present once adapters are enabled (the first adapter load). */
  private lora: LoraLayers | undefined;
  private readonly ropeFactorsDummy: GPUBuffer | undefined;
  /** Dispatches recorded by the last step (for the bench's dispatches-per-token figure). */
  lastDispatches = 0;
  private readonly segments: SegmentPlanner;
  /** Steps of at most this many tokens use the norm-fused products (0: never). */
  private readonly fuseNormUpTo: number;
  private readonly fuseGluUpTo: number;
  /** See StepRunner.lastHostMs and lastSubmitMs. */
  lastHostMs = 0;
  lastSubmitMs = 0;
  /** Tokens of this step that the previous step samples (addSampledToken): its row, this step's token index. */
  private readonly feeds: { row: number; token: number }[] = [];
  /** KV rows copied before this step's work (copyKvRows). */
  private readonly kvCopies: { from: number; to: number; rows: number }[] = [];
  /** The staging buffer (Workspace.sampleReads) the next submitted step copies its samples to. */
  private nextStaging = 0;
  /** Steps submitted and not yet read. */
  private unread = 0;
  /** Rows the last submitted step samples: those a following step may take tokens from. */
  private lastSubmittedRows = 0;
  /** When set, the next run() also reads back the sampled rows' full logits (diagnostics only). */
  captureLogits = false;
  private logitsRead: GPUBuffer | undefined;
  private capturedLogits: Float32Array | undefined;

  readonly maxTokensPerStep: number;
  readonly prefillChunkTokens: number;
  readonly decodingStepTokens: number;
  readonly maxRowsPerStep: number;
  /** The fewest positions a step's longest attention span has for attention to split them (Infinity: never). */
  private readonly splitAttentionFrom: number;
  private readonly tiledAttention: boolean;
  private readonly tiledMinWorkgroups: number;
  /** Split attention's partial sums and the combine pass's bindings, where the adapter's kernel splits. */
  private readonly attnSplit: { partials: GPUBuffer; combine: GPUBindGroup } | undefined;
  /** The serial (CPU) split kernel's partial sums and counters, where the adapter's atomics allow it (attention-serial-split.wgsl). */
  private readonly serialSplit: { partials: GPUBuffer; counters: GPUBuffer } | undefined;

  constructor(
    private readonly ctx: KernelContext,
    readonly cfg: ModelConfig,
    private readonly weights: ModelWeights,
    private readonly cache: PagedKvCache,
    private readonly matrices: MatrixKernels,
    limits: { maxTokensPerStep: number; prefillChunkTokens?: number; decodingStepTokens?: number; maxRowsPerStep: number; yieldEveryMs?: number; kvMirror?: boolean | KvMirrorOptions; fuseNorms?: boolean; splitAttentionFrom?: number | false; tiledAttention?: boolean; tiledAttentionMinWorkgroups?: number; chainWorkers?: number; chainSpinBudget?: number },
    /**
     * Where `queue.submit` runs the work before it returns (llvmpipe through Dawn's OpenGL ES backend), a
     * step is submitted in segments of layers (sized by SegmentPlanner) and this is awaited in between,
     * so the thread's other work (HTTP, timers) waits for one segment rather than a whole step.
     */
    private readonly yieldBetweenLayers?: () => Promise<void>,
  ) {
    this.segments = new SegmentPlanner(cfg.nLayers, MAX_MATVEC_T, limits.yieldEveryMs);
    this.fuseNormUpTo = (limits.fuseNorms ?? true) && cfg.dim % 4 === 0 ? matrices.fuseNormUpTo : 0;
    this.fuseGluUpTo = matrices.fuseGluUpTo;
    this.maxTokensPerStep = limits.maxTokensPerStep;
    this.prefillChunkTokens = limits.prefillChunkTokens ?? limits.maxTokensPerStep;
    this.decodingStepTokens = limits.decodingStepTokens ?? limits.maxTokensPerStep;
    this.maxRowsPerStep = limits.maxRowsPerStep;
    const ws = (this.ws = new Workspace(ctx, cfg, limits.maxTokensPerStep, limits.maxRowsPerStep));
    this.k = {
      rmsnorm: new RmsNormKernel(ctx),
      qkNorm: cfg.block.qkNorm ? new RmsNormKernel(ctx, undefined, 'in-place') : undefined,
      ropeStore: new RopeKvStoreKernel(ctx, 'auto', cache.format),
      attention: new AttentionKernel(ctx, undefined, undefined, cache.format),
      swiglu: new SwiGluKernel(ctx, cfg.block.activation),
      headNorm: new RmsNormKernel(ctx, undefined, 'gather'),
      keepRows: new KeepRowsKernel(ctx),
      sample: new SampleKernel(ctx),
      topk: new TopKKernel(ctx),
      penalties: new PenaltiesKernel(ctx),
    };
    this.keepRowsGroup = this.k.keepRows.bind(ws.lastIndex, ws.qkv, ws.x, ws.positions, ws.slots);
    const mirrorOpts = limits.kvMirror ?? true;
    this.kvMirror =
      mirrorOpts !== false && ctx.caps.weightTextures && cache.format === 'f16' && this.k.attention.serial
        ? new KvMirror(ctx, cache, (k, v, firstRows, out) => this.k.attention.bindMirror(ws.qkv, k, v, firstRows, ws.positions, ws.slots, out), mirrorOpts === true ? {} : mirrorOpts)
        : undefined;
    // Generous: about 15 dispatches per layer plus head and sampling, times row shards, plus 10 per layer
    // in steps with LoRA rows.
    this.arena = new ParamArena(ctx, 64 + cfg.nLayers * 34);
    const qDim = cfg.nHeads * cfg.headDim;
    const kvDim = cfg.nKvHeads * cfg.headDim;
    const F = cfg.ffnDim;
    const D = cfg.dim;
    const S = ws.qkvStride;
    const splitFrom = limits.splitAttentionFrom ?? (this.k.attention.serial ? SERIAL_SPLIT_FROM : gpuSplitAttentionFrom(weights.bytes / cfg.nLayers));
    this.splitAttentionFrom = splitFrom === false ? Infinity : splitFrom;
    this.tiledAttention = limits.tiledAttention ?? true;
    this.tiledMinWorkgroups = limits.tiledAttentionMinWorkgroups ?? TILED_ATTENTION_MIN_WORKGROUPS;
    if (this.k.attention.rotates(cfg.headDim) && S % 4 === 0 && splitFrom !== false) {
      const partials = ctx.storage('act.attn.partials', AttentionKernel.partialsBytes(cfg.headDim));
      this.attnSplit = { partials, combine: this.k.attention.bindCombine(partials, ws.attn) };
    }
    if (this.k.attention.serialSplits(cfg.headDim) && splitFrom !== false) {
      const pairs = limits.maxRowsPerStep * cfg.nHeads;
      this.serialSplit = {
        partials: ctx.storage('act.attn.serial-partials', AttentionKernel.serialPartialsBytes(limits.maxRowsPerStep, cfg.nHeads, cfg.headDim)),
        counters: ctx.storage('act.attn.split-counters', Math.ceil(pairs / 4) * 16),
      };
    }
    if (!weights.ropeFactors) this.ropeFactorsDummy = ctx.storage('rope.factors.none', 16, new Float32Array([1, 1, 1, 1]));
    const ropeFactors = weights.ropeFactors ?? this.ropeFactorsDummy!;
    const io = (xStride: number, yOffset: number, yStride: number, accumulate = false) => ({ xOffset: 0, xStride, yOffset, yStride, accumulate });
    // The down product reads act(gate) * up straight from the gate|up rows (aligned vec4 reads need F % 4 = 0).
    const fuseGlu = F % 4 === 0;

    // Products whose outputs sit side by side in each token's row of y, in order.
    const side = (ms: WeightMatrix[], x: GPUBuffer, y: GPUBuffer, xStride: number, yStride: number, norm?: GPUBuffer, xq8?: boolean, tail?: MatrixIo['tail']) => {
      let col = 0;
      return ms.map((m) => {
        const p = this.matrices.product(m, x, y, { ...io(xStride, col, yStride), norm: norm && { weight: norm, eps: cfg.rmsEps }, xq8, tail: ms.length === 1 ? tail : undefined });
        col += m.rows;
        return p;
      });
    };
    // The norm writes quantized rows for products that all read quantized x in one mode (see
    // LayerPlan.quantized); likewise the activation pass for the down product and the output head's norm.
    // (MatrixKernels.quantizedX checks that each matrix's rows are whole groups of its mode.)
    const modeOf = (ms: WeightMatrix[]): XqMode | undefined => {
      const modes = new Set(ms.map((m) => matrices.quantizedX(m)));
      return modes.size === 1 ? [...modes][0] : undefined;
    };
    const normFor = memoize((mode: XqMode) => new RmsNormKernel(ctx, 'serial', 'q8', mode));
    const activationFor = memoize((mode: XqMode) => new SwiGluKernel(ctx, cfg.block.activation, 'q8', mode));
    const anyQuantized = weights.layers.some((w) => modeOf(w.qkv) || modeOf(w.gateUp));
    const xNormQ8 = anyQuantized ? xq8Buffer(ctx, 'act.x-norm.q8', limits.maxTokensPerStep * q8RowVec4s(D) * 16) : undefined;
    const quantized = (ms: WeightMatrix[], norm: GPUBuffer, y: GPUBuffer, yStride: number, tail?: MatrixIo['tail']): NormedProducts | undefined => {
      const mode = modeOf(ms);
      if (!mode || !xNormQ8) return undefined;
      const kernel = normFor(mode);
      return { kernel, norm: kernel.bind(ws.x, norm, xNormQ8), products: side(ms, xNormQ8, y, q8RowVec4s(D), yStride, undefined, true, tail) };
    };
    const downMode = (w: LayerWeights) => modeOf([w.down]);
    const actQ8 = weights.layers.some(downMode) ? xq8Buffer(ctx, 'act.act.q8', limits.maxTokensPerStep * q8RowVec4s(F) * 16) : undefined;
    // Decode products on CPU rasterisers run the pass after them in their last invocations
    // (MatrixKernels.tails): the norm that the next products read as int8 rows after the O and down
    // products (the FFN's, the next layer's), the gated activation after gate|up, RoPE + KV store after
    // QKV. The step's encoding asks for each where that pass would run next (encodeForward).
    // The norm tail's words (tailCounterWords) are most for 32-value groups: a counter and a partial sum a row of x a group.
    const normWords = tailCounterWords({ kind: 'norm-q8', mode: 'q8_0' }, { n: D, inOffset: 0, inStride: D });
    const counter = matrices.tails ? ctx.storage('tail.count', Math.max(16, Math.max(F / 32, cfg.nHeads + 2 * cfg.nKvHeads, normWords) * 4)) : undefined;
    this.tailCounter = counter;
    // `producer`: the product whose rows the norm takes; its tail needs all of them in one dispatch.
    const normTail = (producer: WeightMatrix, ms: WeightMatrix[], weight: GPUBuffer): MatrixIo['tail'] => {
      const mode = modeOf(ms);
      return counter && mode && xNormQ8 && producer.shards.length === 1 ? { tail: { kind: 'norm-q8', mode }, buffers: [counter, weight, xNormQ8], params: { n: D, inOffset: 0, inStride: D, eps: cfg.rmsEps } } : undefined;
    };
    const gluTail = (w: LayerWeights): MatrixIo['tail'] => {
      const mode = downMode(w);
      return counter && mode && actQ8 && w.gateUp.length === 1 && w.gateUp[0].shards.length === 1 ? { tail: { kind: 'glu-q8', mode, activation: cfg.block.activation }, buffers: [counter, actQ8], params: { n: F, inOffset: 0, inStride: 2 * F, up: F } } : undefined;
    };
    // RoPE and the KV store after a stacked Q|K|V product: its rows are the heads in order, heads whole
    // vec4s (as the vec4 RoPE/KV-store kernel needs) and whole invocations' rows (8 or 4 a head
    // suffices), no per-head norm between, and the device binds 7 more storage buffers.
    const r = cfg.rope;
    const rope: RopeTail = (this.rope = { heads: cfg.nHeads, kvHeads: cfg.nKvHeads, headDim: cfg.headDim, pageSize: cache.pageSize, maxPages: cache.maxPagesPerSeq, nRot: r.nRot, neox: r.neox, freqBase: r.base, freqScale: r.freqScale, useFactors: weights.ropeFactors !== undefined });
    // 8 rows an invocation, the most a rows kernel computes (4 divides it too).
    const ropeTailOk = !cfg.block.qkNorm && ropeTailFits(rope, 0, S, 8) && ctx.caps.maxStorageBuffersPerStage >= 12;
    const ropeTail = (w: LayerWeights, l: number): MatrixIo['tail'] =>
      counter && ropeTailOk && w.qkv.length === 1 && w.qkv[0].shards.length === 1
        ? { tail: { kind: 'rope-kv', kv: cache.format }, buffers: [counter, ws.positions, ws.slots, cache.pageTable, ropeFactors, cache.k[l], cache.v[l]], params: { n: qDim + 2 * kvDim, inOffset: 0, inStride: S, rope } }
        : undefined;
    const quantizedDown = (w: LayerWeights, next: LayerWeights | undefined) => {
      const mode = downMode(w);
      if (!mode || !actQ8) return undefined;
      const kernel = activationFor(mode);
      const tail = next && normTail(w.down, next.qkv, next.attnNorm);
      return { kernel, swiglu: kernel.bind(ws.gateUp, ws.gateUp, actQ8), down: this.matrices.product(w.down, actQ8, ws.x, { ...io(q8RowVec4s(F), 0, D, true), xq8: true, tail }) };
    };
    const oQuantized = (w: LayerWeights) => modeOf([w.o]) === 'q8_0' && cfg.headDim % 32 === 0 && this.k.attention.serial;
    const attnQ8 = weights.layers.some(oQuantized) ? xq8Buffer(ctx, 'act.attn.q8', limits.maxTokensPerStep * q8RowVec4s(qDim) * 16) : undefined;
    const headMode = modeOf([weights.output]);
    const xLastNormQ8 = headMode ? ctx.storage('act.x-last-norm.q8', limits.maxRowsPerStep * q8RowVec4s(D) * 16) : undefined;
    this.embed = matrices.embedding(weights.embedding, ws.tokens, ws.x, cfg.embedScale);
    this.layers = weights.layers.map((w, l): LayerPlan => {
      const qDown = quantizedDown(w, weights.layers[l + 1]);
      const ffnTail = normTail(w.o, w.gateUp, w.ffnNorm);
      const qkvTail = ropeTail(w, l);
      return {
        attnNorm: this.k.rmsnorm.bind(ws.x, w.attnNorm, ws.xNorm),
        qkv: side(w.qkv, ws.xNorm, ws.qkv, D, S, undefined, undefined, qkvTail),
        qkNorm: w.qkNorm && this.k.qkNorm?.bind(ws.qkv, w.qkNorm),
        ropeStore: this.k.ropeStore.bind(ws.qkv, ws.positions, ws.slots, cache.pageTable, ropeFactors, cache.k[l], cache.v[l]),
        attention: this.k.attention.bind(ws.qkv, cache.k[l], cache.v[l], cache.pageTable, ws.positions, ws.slots, ws.attn),
        attentionRope: this.k.attention.rotates(cfg.headDim) && S % 4 === 0 ? this.k.attention.bindRope(ws.qkv, cache.k[l], cache.v[l], cache.pageTable, ws.positions, ws.slots, ws.attn, ropeFactors) : undefined,
        serialSplit: this.serialSplit && {
          attention: this.k.attention.bindSerialSplit(ws.qkv, cache.k[l], cache.v[l], cache.pageTable, ws.positions, ws.slots, ws.attn, this.serialSplit.partials, this.serialSplit.counters),
          quantized: attnQ8 && this.k.attention.bindSerialSplit(ws.qkv, cache.k[l], cache.v[l], cache.pageTable, ws.positions, ws.slots, attnQ8, this.serialSplit.partials, this.serialSplit.counters),
        },
        split: this.attnSplit && {
          attention: this.k.attention.bind(ws.qkv, cache.k[l], cache.v[l], cache.pageTable, ws.positions, ws.slots, this.attnSplit.partials),
          attentionRope: this.k.attention.bindRope(ws.qkv, cache.k[l], cache.v[l], cache.pageTable, ws.positions, ws.slots, this.attnSplit.partials, ropeFactors),
        },
        o: this.matrices.product(w.o, ws.attn, ws.x, { ...io(qDim, 0, D, true), tail: ffnTail }),
        quantizedO:
          attnQ8 && oQuantized(w)
            ? {
                attention: this.k.attention.bind(ws.qkv, cache.k[l], cache.v[l], cache.pageTable, ws.positions, ws.slots, attnQ8),
                o: this.matrices.product(w.o, attnQ8, ws.x, { ...io(q8RowVec4s(qDim), 0, D, true), xq8: true, tail: ffnTail }),
                out: attnQ8,
              }
            : undefined,
        ffnNorm: this.k.rmsnorm.bind(ws.x, w.ffnNorm, ws.xNorm),
        gateUp: side(w.gateUp, ws.xNorm, ws.gateUp, D, 2 * F),
        normed: this.fuseNormUpTo > 0 ? { qkv: side(w.qkv, ws.x, ws.qkv, D, S, w.attnNorm), gateUp: side(w.gateUp, ws.x, ws.gateUp, D, 2 * F, w.ffnNorm) } : undefined,
        quantized: xNormQ8 && { qkv: quantized(w.qkv, w.attnNorm, ws.qkv, S, qkvTail), gateUp: quantized(w.gateUp, w.ffnNorm, ws.gateUp, 2 * F, qDown && gluTail(w)) },
        quantizedDown: qDown,
        // Where the down product reads quantized x, the f32 activation pass and plain product below serve
        // only steps whose adapters adapt it, so no GLU-fused product is built.
        ...(fuseGlu && !qDown
          ? {
              down: this.matrices.product(w.down, ws.gateUp, ws.x, { ...io(2 * F, 0, D, true), glu: { activation: cfg.block.activation, upOffset: F } }),
              unfusedDown: Number.isFinite(this.fuseGluUpTo) ? this.unfusedDown(w) : undefined,
            }
          : { swiglu: this.k.swiglu.bind(ws.gateUp, ws.gateUp, ws.act), down: this.matrices.product(w.down, ws.act, ws.x, io(F, 0, D, true)) }),
      };
    });
    // Decode steps run each layer's O, gate|up and down products (with their tails) in one dispatch of
    // persistent workgroups, one to each of llvmpipe's pinned compute threads (`chainWorkers`), where
    // the layer takes those products' quantized paths and tails: O after quantized attention, stacked
    // gate|up, one shard and no bias each, a next layer. Likewise its stacked Q|K|V product with its RoPE
    // tail and attention over the f16 cache.
    const chainWorkers = limits.chainWorkers ?? 0;
    if (chainWorkers > 0 && counter && attnQ8 && xNormQ8 && actQ8) {
      const whole = (m: WeightMatrix) => m.shards.length === 1 && m.bias === undefined;
      const chainLayers = weights.layers.map((w, l): ChainLayer => {
        const next = weights.layers[l + 1];
        const L = this.layers[l];
        const [ffnNorm, act, nextNorm] = [modeOf(w.gateUp), downMode(w), next && modeOf(next.qkv)];
        const ffn: FfnChainLayer | undefined =
          next && L.quantizedO && L.quantizedDown && L.quantized?.gateUp && w.gateUp.length === 1 && [w.o, w.gateUp[0], w.down].every(whole) && ffnNorm && act && nextNorm
            ? { o: w.o, gateUp: w.gateUp[0], down: w.down, ffnNorm: w.ffnNorm, nextNorm: next.attnNorm, modes: { ffnNorm, act, nextNorm } }
            : undefined;
        const qkv: QkvChainLayer | undefined = L.quantizedO && L.quantized?.qkv && ropeTail(w, l) && cache.format === 'f16' && whole(w.qkv[0]) ? { qkv: w.qkv[0], kCache: cache.k[l], vCache: cache.v[l] } : undefined;
        return { ffn, qkv };
      });
      if (chainLayers.some((c) => c.ffn || c.qkv)) {
        const buffers = { attnQ8, x: ws.x, counters: counter, xNormQ8, gateUp: ws.gateUp, actQ8, qkv: ws.qkv, positions: ws.positions, tokenSeq: ws.slots, pageTable: cache.pageTable, factors: ropeFactors, split: this.serialSplit };
        this.chains = LayerChains.tryBuild(ctx, cfg, { rope, qkvStride: S, maxPositions: cache.maxPagesPerSeq * cache.pageSize }, chainLayers, buffers, chainWorkers, CPU_MATVEC_UP_TO, limits.chainSpinBudget);
      }
    }
    const headNormQ8 = headMode && new RmsNormKernel(ctx, 'serial', 'gather-q8', headMode);
    this.head = {
      ...(headNormQ8 && xLastNormQ8
        ? {
            normKernel: headNormQ8,
            norm: headNormQ8.bind(ws.x, weights.outputNorm, xLastNormQ8, ws.lastIndex),
            product: this.matrices.product(weights.output, xLastNormQ8, ws.logits, { ...io(q8RowVec4s(D), 0, cfg.vocabSize), xq8: true }),
          }
        : {
            normKernel: this.k.headNorm,
            norm: this.k.headNorm.bind(ws.x, weights.outputNorm, ws.xLastNorm, ws.lastIndex),
            product: this.matrices.product(weights.output, ws.xLastNorm, ws.logits, io(D, 0, cfg.vocabSize)),
          }),
      // Steps whose rows are their tokens in order (decode): the head product folds the final norm in, as
      // the QKV and gate|up products do, one dispatch fewer.
      normed:
        this.fuseNormUpTo > 0 && !(headNormQ8 && xLastNormQ8)
          ? this.matrices.product(weights.output, ws.x, ws.logits, { ...io(D, 0, cfg.vocabSize), norm: { weight: weights.outputNorm, eps: cfg.rmsEps } })
          : undefined,
      sample: this.k.sample.bind(ws.logits, ws.mask, ws.sampleSettings, ws.samplePartials, ws.sampleOut),
      topk: this.k.topk.bind(ws.logits, ws.mask, ws.sampleSettings, ws.topkOut),
      penalties: this.k.penalties.bind(ws.logits, ws.penaltyEntries, ws.penaltyRows),
    };

    const T = limits.maxTokensPerStep;
    const R = limits.maxRowsPerStep;
    this.tokens = new Uint32Array(T);
    this.positions = new Uint32Array(T);
    this.slots = new Uint32Array(T);
    this.tokenAdapter = new Uint32Array(T);
    this.lastIndex = new Uint32Array(R);
    this.settingsU32 = new Uint32Array((R * SAMPLE_ROW_BYTES) / 4);
    this.settingsF32 = new Float32Array(this.settingsU32.buffer);
    this.mask = new Uint32Array(R * ws.maskWords);
    this.penRowsU32 = new Uint32Array((R * PENALTY_ROW_BYTES) / 4);
    this.penRowsF32 = new Float32Array(this.penRowsU32.buffer);
    this.penEntries = new Uint32Array((MAX_PENALTY_ENTRIES * PENALTY_ENTRY_BYTES) / 4);
    this.sampledU32 = new Uint32Array(R * SAMPLE_OUT_WORDS);
    this.sampledF32 = new Float32Array(this.sampledU32.buffer);
    this.topkU32 = new Uint32Array(R * TOPK_ROW_WORDS);
    this.topkF32 = new Float32Array(this.topkU32.buffer);
  }

  /** The gated activation as its own pass, then the down product on its output (see fuseGluUpTo). */
  private unfusedDown(w: LayerWeights): { swiglu: GPUBindGroup; down: BoundProduct } {
    const ws = this.ws;
    return {
      swiglu: this.k.swiglu.bind(ws.gateUp, ws.gateUp, ws.act),
      down: this.matrices.product(w.down, ws.act, ws.x, { xOffset: 0, xStride: this.cfg.ffnDim, yOffset: 0, yStride: this.cfg.dim, accumulate: true }),
    };
  }

  begin(): void {
    this.feeds.length = 0;
    this.kvCopies.length = 0;
    this.nTokens = 0;
    this.nRows = 0;
    this.nEntries = 0;
    this.anyMask = false;
    this.anyPenalty = false;
    this.anyCandidates = false;
    this.anyAdapter = false;
    this.sharedSlot = false;
    this.stepStamp++;
    this.lora?.begin();
  }

  /**
   * Run LoRA adapters from `pool` in steps whose tokens name one (addToken's `adapter`). Compiles the
   * LoRA kernels and binds the unfused paths the adapted steps take, so call it when loading the first
   * adapter, not on a request's time.
   */
  enableLora(pool: LoraPool): void {
    if (this.lora) {
      if (this.lora.pool !== pool) throw new Error('LoRA is enabled with another adapter pool');
      return;
    }
    this.weights.layers.forEach((w, l) => {
      const L = this.layers[l];
      if (!L.swiglu) L.unfusedDown ??= this.unfusedDown(w);
    });
    this.lora = new LoraLayers(this.ctx, this.cfg, this.ws, pool);
  }

  /** `adapter`: the pool slot of the LoRA adapter this token's sequence uses (enableLora), or -1 for none. */
  addToken(token: number, position: number, slot: number, adapter = -1): number {
    const i = this.nTokens;
    if (i >= this.maxTokensPerStep) throw new Error(`step holds at most ${this.maxTokensPerStep} tokens`);
    if (token < 0 || token >= this.cfg.vocabSize || !Number.isInteger(token)) throw new Error(`token id ${token} is outside the vocabulary (0..${this.cfg.vocabSize - 1})`);
    this.tokens[i] = token;
    this.positions[i] = position;
    this.slots[i] = slot;
    if (slot >= this.slotStamps.length) {
      const grown = new Uint32Array(Math.max(slot + 1, 2 * this.slotStamps.length));
      grown.set(this.slotStamps);
      this.slotStamps = grown;
    }
    if (this.slotStamps[slot] === this.stepStamp) this.sharedSlot = true;
    this.slotStamps[slot] = this.stepStamp;
    if (adapter >= 0) {
      if (!this.lora) throw new Error(`token names adapter slot ${adapter}, but no LoRA adapter is loaded`);
      this.lora.use(adapter);
      this.tokenAdapter[i] = adapter;
      this.anyAdapter = true;
    } else this.tokenAdapter[i] = LORA_NO_ADAPTER;
    this.nTokens++;
    return i;
  }

  copyKvRows(from: number, to: number, rows: number): void {
    this.kvCopies.push({ from, to, rows });
  }

  addRow(tokenIndex: number, spec: SampleRowSpec): number {
    const r = this.nRows;
    if (r >= this.maxRowsPerStep) throw new Error(`step samples at most ${this.maxRowsPerStep} rows`);
    this.lastIndex[r] = tokenIndex;
    writeSampleRow(this.settingsU32, this.settingsF32, r, { temperature: spec.temperature, seed: spec.seed, counter: spec.counter, useMask: spec.mask !== null });
    if (spec.mask) {
      const words = this.ws.maskWords;
      if (spec.mask.length < words) throw new Error(`token mask has ${spec.mask.length} words; the vocabulary needs ${words}`);
      this.mask.set(spec.mask.subarray(0, words), r * words);
      this.anyMask = true;
    }
    const pen = spec.penalties;
    let count = 0;
    if (pen) {
      count = Math.min(pen.entries.length, MAX_PENALTY_ENTRIES - this.nEntries);
      for (let j = 0; j < count; j++) {
        const e = pen.entries[j];
        writePenaltyEntry(this.penEntries, this.nEntries + j, e.token, e.count, e.inWindow);
      }
      this.anyPenalty = true;
    }
    writePenaltyRow(this.penRowsU32, this.penRowsF32, r, {
      start: this.nEntries,
      count,
      presence: pen?.presence ?? 0,
      frequency: pen?.frequency ?? 0,
      repetition: pen?.repetition ?? 1,
    });
    this.nEntries += count;
    if (spec.candidates) this.anyCandidates = true;
    this.nRows++;
    return r;
  }

  private upload(): void {
    const q = this.ctx.device.queue;
    const ws = this.ws;
    this.chains?.upload(q);
    const T = this.nTokens;
    const R = this.nRows;
    q.writeBuffer(ws.tokens, 0, this.tokens, 0, T);
    q.writeBuffer(ws.positions, 0, this.positions, 0, T);
    q.writeBuffer(ws.slots, 0, this.slots, 0, T);
    if (this.anyAdapter) q.writeBuffer(ws.tokenAdapter, 0, this.tokenAdapter, 0, T);
    if (R === 0) return;
    q.writeBuffer(ws.lastIndex, 0, this.lastIndex, 0, R);
    q.writeBuffer(ws.sampleSettings, 0, this.settingsU32, 0, (R * SAMPLE_ROW_BYTES) / 4);
    if (this.anyMask) q.writeBuffer(ws.mask, 0, this.mask, 0, R * ws.maskWords);
    if (this.anyPenalty) {
      q.writeBuffer(ws.penaltyRows, 0, this.penRowsU32, 0, (R * PENALTY_ROW_BYTES) / 4);
      q.writeBuffer(ws.penaltyEntries, 0, this.penEntries, 0, Math.max(4, (this.nEntries * PENALTY_ENTRY_BYTES) / 4));
    }
  }

  async run(): Promise<void> {
    await (await this.submit()).read();
  }

  /**
   * Encode and submit the step (one command buffer, or one per segment of layers where submit blocks);
   * resolves once all of it is submitted, so the next step's uploads queue after it, and the returned
   * step's read() waits for its sampled rows. Tokens added with addSampledToken are copied on the GPU
   * from the previous step's samples before this step's first pass.
   */
  async submit(): Promise<SubmittedStep> {
    const T = this.nTokens;
    const R = this.nRows;
    if (T === 0) return { read: async () => undefined };
    if (this.unread >= 2) throw new Error('two steps are already waiting to be read');
    const started = performance.now();
    if (this.unread > 0 && this.chainedUnread) throw new Error('a step was submitted after one that took an FFN chain and is not read yet (chains need decode unpipelined)');
    this.chains?.beginStep(this.chainsAllowed && this.unread === 0 && this.feeds.length === 0);
    this.upload();
    const mirror = this.kvMirror?.plan(this.slots, this.positions, T);
    const device = this.ctx.device;
    const arena = this.arena;
    arena.reset();
    const segments: GPUCommandBuffer[] = [];
    const split = this.yieldBetweenLayers !== undefined;
    let enc = device.createCommandEncoder({ label: 'step' });
    const ws = this.ws;
    for (const c of this.kvCopies) this.cache.encodeCopyRows(enc, c.from, c.to, c.rows);
    for (const f of this.feeds) enc.copyBufferToBuffer(ws.sampleOut, f.row * SAMPLE_OUT_WORDS * 4, ws.tokens, f.token * 4, 4);
    // The arena holds the step's open pass, so a product may end it for a copy (kernels/matmul-x-texture.ts).
    let pass = arena.beginStep(enc, 'step');
    const perSegment = this.segments.layersPerSegment(T);
    this.encodeForward(pass, T, perSegment, mirror, split ? () => {
      const finished = enc;
      enc = device.createCommandEncoder({ label: 'step' });
      pass = arena.continueStep(enc);
      segments.push(finished.finish());
      return pass;
    } : undefined);
    if (R > 0) this.encodeHead(pass, R);
    arena.endStep();
    this.lastDispatches = arena.slotsUsed;
    const readIndex = this.nextStaging;
    const staging = ws.sampleReads[readIndex];
    this.nextStaging ^= 1;
    const chained = this.chains?.anyUsed ?? false;
    if (chained) this.chains!.encodeRead(enc, readIndex);
    const candidates = this.anyCandidates;
    const logits = this.captureLogits;
    if (R > 0) {
      enc.copyBufferToBuffer(ws.sampleOut, 0, staging, 0, R * SAMPLE_OUT_WORDS * 4);
      if (candidates) enc.copyBufferToBuffer(ws.topkOut, 0, ws.topkRead, 0, R * TOPK_ROW_WORDS * 4);
      if (logits) {
        this.logitsRead ??= device.createBuffer({ label: 'read.logits', size: ws.logits.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
        enc.copyBufferToBuffer(ws.logits, 0, this.logitsRead, 0, R * this.cfg.vocabSize * 4);
      }
    }
    arena.flush();
    // The device has work from the first submit on. (Even on llvmpipe a layer's work may still run after
    // its submit returns, so the yields between layers are not counted as idle.)
    const hostMs = performance.now() - started;
    let submitMs = 0;
    const submitTimed = (buffer: GPUCommandBuffer) => {
      const t0 = performance.now();
      device.queue.submit([buffer]);
      submitMs += performance.now() - t0;
    };
    for (const segment of segments) {
      submitTimed(segment);
      await this.yieldBetweenLayers!();
    }
    submitTimed(enc.finish());
    this.unread++;
    this.chainedUnread = chained;
    this.lastSubmittedRows = R;
    const read = async () => {
      try {
        if (R === 0) {
          await device.queue.onSubmittedWorkDone();
        } else {
          await staging.mapAsync(GPUMapMode.READ, 0, R * SAMPLE_OUT_WORDS * 4);
          this.sampledU32.set(new Uint32Array(staging.getMappedRange(0, R * SAMPLE_OUT_WORDS * 4)));
          staging.unmap();
          if (candidates) {
            await ws.topkRead.mapAsync(GPUMapMode.READ, 0, R * TOPK_ROW_WORDS * 4);
            this.topkU32.set(new Uint32Array(ws.topkRead.getMappedRange(0, R * TOPK_ROW_WORDS * 4)));
            ws.topkRead.unmap();
          }
          if (logits && this.logitsRead) {
            const bytes = R * this.cfg.vocabSize * 4;
            await this.logitsRead.mapAsync(GPUMapMode.READ, 0, bytes);
            this.capturedLogits = new Float32Array(this.logitsRead.getMappedRange(0, bytes).slice(0));
            this.logitsRead.unmap();
          }
        }
        if (chained) {
          this.chainedUnread = false;
          // A barrier gave up (a thread kept off its CPU): the step again, one dispatch a product. The
          // products then overlapped and their tails' counters (zero between products, by design) may
          // be left mid-count: zeroed first.
          if (await this.chains!.failed(readIndex)) {
            this.ctx.device.queue.writeBuffer(this.tailCounter!, 0, new Uint32Array(this.tailCounter!.size / 4));
            this.unread--;
            try {
              await (await this.submit()).read();
            } finally {
              this.unread++;
            }
            return;
          }
        }
        this.lastHostMs = hostMs;
        this.lastSubmitMs = submitMs;
        if (split) this.segments.observe(T, performance.now() - started - hostMs);
      } finally {
        this.unread--;
      }
    };
    return { read };
  }

  addSampledToken(row: number, position: number, slot: number, adapter = -1): number {
    if (row >= this.lastSubmittedRows) throw new Error(`sampled token of row ${row}: the step submitted last sampled ${this.lastSubmittedRows} rows`);
    // A placeholder id the GPU copy replaces before the step's first pass.
    const i = this.addToken(0, position, slot, adapter);
    this.feeds.push({ row, token: i });
    return i;
  }

  /** Logits of row `row` from the last run with captureLogits set. */
  logitsOf(row: number): Float32Array {
    if (!this.capturedLogits) throw new Error('no logits captured: set captureLogits before run()');
    const V = this.cfg.vocabSize;
    return this.capturedLogits.slice(row * V, (row + 1) * V);
  }

  /** `afterLayer` (if given) is called after every `perSegment` layers but not after the last; it may replace the pass. */
  private encodeForward(firstPass: GPUComputePassEncoder, T: number, perSegment: number, mirror: MirrorPlan | undefined, afterLayer?: () => GPUComputePassEncoder): void {
    let pass = firstPass;
    const cfg = this.cfg;
    const a = this.arena;
    const k = this.k;
    const hd = cfg.headDim;
    const S = this.ws.qkvStride;
    const cache = this.cache;
    this.embed.encode(pass, a, T);
    let done = 0;
    // Layers with adapted products take the unfused paths: LoRA's A reads the normed x and the activated
    // hidden state, which the fused products compute only inside themselves.
    const lora = this.anyAdapter ? this.lora : undefined;
    const fusable = T <= this.fuseNormUpTo;
    // Whether the product before has already written the next norm's int8 rows (its tail).
    let qkvNormed = false;
    // The last layer past its KV store on the sampled rows only (pruneLastLayer).
    const R = this.nRows;
    const prune = this.pruneLastLayer && R > 0 && R < T && !this.anyAdapter;
    const last = this.layers.length - 1;
    // Attention splits positions (flash-decoding) by the step's longest span; a pruned last layer's
    // rows are some of the step's, so the same span bounds them (its split is chosen for its R rows).
    let span = 0;
    if (this.attnSplit || this.serialSplit) for (let i = 0; i < T; i++) span = Math.max(span, this.positions[i] + 1);
    const splitsOf = (n: number) =>
      this.attnSplit ? k.attention.splitsFor(n, cfg.nHeads, hd, span, this.splitAttentionFrom) : this.serialSplit && n <= this.maxRowsPerStep ? k.attention.serialSplitsFor(n, cfg.nHeads, cfg.nKvHeads, hd, span, this.splitAttentionFrom) : 1;
    const splitsAll = splitsOf(T);
    const runs = this.sequenceRuns(T);
    const tiled = this.tiledAttention && T >= TILED_ATTENTION_MIN_TOKENS && T >= TILED_ATTENTION_RUN * runs && tiledWorkgroups(T, cfg.headDim, cfg.nHeads, cfg.nKvHeads) >= this.tiledMinWorkgroups;
    const splitsPruned = prune ? splitsOf(R) : 1;
    const paired = T >= PAIRED_ATTENTION_RUN * runs;
    const attentionParams = (n: number, splits: number, output: 'q8_0' | 'f32', kvSource: 'pages' | 'mirror', rotating: boolean, pruned: boolean) => ({
      tokens: n,
      heads: cfg.nHeads,
      kvHeads: cfg.nKvHeads,
      headDim: hd,
      pageSize: cache.pageSize,
      maxPages: cache.maxPagesPerSeq,
      scale: 1 / Math.sqrt(hd),
      qStride: S,
      output,
      kvSource,
      rope: rotating ? this.rope : undefined,
      splits,
      tiled: tiled && !pruned,
      tokenPairs: paired && !pruned,
    });
    this.layers.forEach((L, l) => {
      const quantizedO = !(lora?.adapts(l, 'o') ?? false) ? L.quantizedO : undefined;
      const pruned = prune && l === last;
      // From here on the layer's rows: all T tokens, or the R sampled ones moved to rows 0..R-1.
      const n = pruned ? R : T;
      const fusableN = n <= this.fuseNormUpTo;
      // The Q|K|V product (its RoPE tail storing K and V) and attention in one dispatch (layer-chains.ts)
      // where both would run their decode forms: no adapter, quantized attention output over the paged
      // cache, rows of x the tails take; the norm before it is its own pass where no tail wrote it.
      const chainSplits = L.serialSplit?.quantized ? splitsAll : 1;
      const quantizedQkv = L.quantized?.qkv;
      if (!lora && quantizedO && quantizedQkv && !fusable && !pruned && !mirror && this.chains?.takesQkv(l, T, chainSplits)) {
        if (!qkvNormed) quantizedQkv.kernel.encode(pass, a, quantizedQkv.norm, { rows: T, dim: cfg.dim, eps: cfg.rmsEps });
        this.chains.encodeQkv(pass, a, l, T, attentionParams(T, chainSplits, 'q8_0', 'pages', false, false));
      } else {
        const adaptedQkv = lora?.adapts(l, 'qkv') ?? false;
        const roped = this.encodeNormed(pass, T, L, 'qkv', fusable, adaptedQkv, qkvNormed, !adaptedQkv);
        lora?.encode(pass, a, l, 'qkv', T);
        // Q heads then K heads of each token, normed where they lie: one dispatch, two weight vectors.
        if (L.qkNorm) k.qkNorm!.encode(pass, a, L.qkNorm, { rows: T * (cfg.nHeads + cfg.nKvHeads), dim: hd, eps: cfg.rmsEps, group: cfg.nHeads + cfg.nKvHeads, xStride: S, wSplit: cfg.nHeads });
        // Rotating attention stores K and V itself, for the tokens it runs on: not when it runs on fewer.
        const rotating = !roped && !pruned && !this.sharedSlot && !mirror && !quantizedO && L.attentionRope !== undefined;
        if (!roped && !rotating) k.ropeStore.encode(pass, a, L.ropeStore, { ...this.rope, tokens: T, tokenStride: S });
        // A pruned layer reads the paged cache, not the mirror (R rows read too little to be worth one).
        const mirrored = mirror && !pruned ? mirror : undefined;
        if (pruned) k.keepRows.encode(pass, a, this.keepRowsGroup, { rows: R, qDim: cfg.nHeads * hd, qkvStride: S, dim: cfg.dim });
        if (mirrored) this.kvMirror!.encodeLayer(pass, a, l, mirrored);
        const serialSplit = L.serialSplit && !mirrored && (!quantizedO || L.serialSplit.quantized) ? L.serialSplit : undefined;
        const splits = (L.split && !quantizedO) || serialSplit ? (mirrored ? 1 : pruned ? splitsPruned : splitsAll) : 1;
        const split = splits > 1 ? L.split : undefined;
        const serialGroup = splits > 1 && serialSplit ? (quantizedO ? serialSplit.quantized : serialSplit.attention) : undefined;
        const attention = mirrored ? this.kvMirror!.attentionGroup(quantizedO?.out ?? this.ws.attn) : rotating ? (split?.attentionRope ?? L.attentionRope!) : (serialGroup ?? split?.attention ?? quantizedO?.attention ?? L.attention);
        k.attention.encode(pass, a, attention, attentionParams(n, splits, quantizedO ? 'q8_0' : 'f32', mirrored ? 'mirror' : 'pages', rotating, pruned), this.attnSplit?.combine);
      }
      // A tail runs only where its pass would come next: no adapter's product between, and the
      // consumer on the quantized path (encodeNormed's).
      // The FFN in one dispatch (layer-chains.ts) where its products would run with their tails: no adapter
      // in the step, quantized attention's output, rows of x the tails take; its down product's tail
      // writes the next layer's normed rows.
      if (!lora && quantizedO && !fusableN && !pruned && this.chains?.encodeFfn(pass, a, l, n)) {
        qkvNormed = true;
        if (afterLayer && ++done % perSegment === 0 && done < this.layers.length) pass = afterLayer();
        return;
      }
      const adaptedO = lora?.adapts(l, 'o') ?? false;
      const adaptedGateUp = lora?.adapts(l, 'gateUp') ?? false;
      const adaptedDown = lora?.adapts(l, 'down') ?? false;
      const ffnNormed = (quantizedO?.o ?? L.o).encode(pass, a, n, !fusableN && !adaptedO && !adaptedGateUp);
      lora?.encode(pass, a, l, 'o', n);
      const activated = this.encodeNormed(pass, n, L, 'gateUp', fusableN, adaptedGateUp, ffnNormed, L.quantizedDown !== undefined && !adaptedDown);
      lora?.encode(pass, a, l, 'gateUp', n);
      const glu = { tokens: n, n: cfg.ffnDim, gateOffset: 0, upOffset: cfg.ffnDim, inStride: 2 * cfg.ffnDim };
      qkvNormed = false;
      if (L.quantizedDown && !adaptedDown) {
        if (!activated) L.quantizedDown.kernel.encode(pass, a, L.quantizedDown.swiglu, glu);
        const nextAdapted = lora?.adapts(l + 1, 'qkv') ?? false;
        qkvNormed = L.quantizedDown.down.encode(pass, a, n, !fusableN && !nextAdapted && l + 1 < this.layers.length);
      } else if (L.unfusedDown && (n > this.fuseGluUpTo || adaptedDown)) {
        k.swiglu.encode(pass, a, L.unfusedDown.swiglu, glu);
        L.unfusedDown.down.encode(pass, a, n);
      } else {
        if (L.swiglu) k.swiglu.encode(pass, a, L.swiglu, glu);
        L.down.encode(pass, a, n);
      }
      lora?.encode(pass, a, l, 'down', n);
      if (afterLayer && ++done % perSegment === 0 && done < this.layers.length) pass = afterLayer();
    });
  }

  /**
   * RMSNorm and the QKV or gate|up products after it: folded into the products (GPUs, decode-sized
   * steps), through quantized x (LayerPlan.quantized), or a norm pass and plain products. Layers whose
   * products an adapter of this step adapts take the plain path: LoRA's A reads the f32 normed x.
   * `normed`: the product before already wrote this norm's quantized rows (its tail). `tail`: ask the
   * products for theirs (QKV: RoPE + KV store, gate|up: the activation); returns whether one ran.
   */
  private encodeNormed(pass: GPUComputePassEncoder, T: number, L: LayerPlan, group: 'qkv' | 'gateUp', fusable: boolean, adapted: boolean, normed: boolean, tail = false): boolean {
    const a = this.arena;
    const q = adapted ? undefined : L.quantized?.[group];
    // `normed`: the product before ran this norm as its tail, into the quantized path's input.
    if (normed && (!q || fusable)) throw new Error(`layer ${this.layers.indexOf(L)}: the ${group} norm ran as a tail, but this step does not read its output`);
    if (fusable && !adapted) {
      for (const p of L.normed![group]) p.encode(pass, a, T);
      return false;
    }
    const norm = { rows: T, dim: this.cfg.dim, eps: this.cfg.rmsEps };
    if (q) {
      if (!normed) q.kernel.encode(pass, a, q.norm, norm);
      let tailed = false;
      for (const p of q.products) tailed = p.encode(pass, a, T, tail) || tailed;
      return tailed;
    }
    this.k.rmsnorm.encode(pass, a, group === 'qkv' ? L.attnNorm : L.ffnNorm, norm);
    let tailed = false;
    for (const p of L[group]) tailed = p.encode(pass, a, T, tail) || tailed;
    return tailed;
  }

  private encodeHead(pass: GPUComputePassEncoder, R: number): void {
    const cfg = this.cfg;
    const a = this.arena;
    const k = this.k;
    const h = this.head;
    const V = cfg.vocabSize;
    if (h.normed && R === this.nTokens && R <= this.fuseNormUpTo && this.rowsAreTokens(R)) {
      h.normed.encode(pass, a, R);
    } else {
      h.normKernel.encode(pass, a, h.norm, { rows: R, dim: cfg.dim, eps: cfg.rmsEps });
      h.product.encode(pass, a, R);
    }
    if (this.anyPenalty) k.penalties.encode(pass, a, h.penalties, { rows: R, logitsStride: V });
    k.sample.encode(pass, a, h.sample, { rows: R, vocab: V, logitsStride: V, maskWords: this.ws.maskWords });
    if (this.anyCandidates) k.topk.encode(pass, a, h.topk, { rows: R, vocab: V, logitsStride: V, maskWords: this.ws.maskWords });
  }

  /** Runs of consecutive tokens of one sequence among the step's first T (the tokens lie in sequence order). */
  private sequenceRuns(T: number): number {
    let runs = 1;
    for (let i = 1; i < T; i++) if (this.slots[i] !== this.slots[i - 1]) runs++;
    return runs;
  }

  /**
   * Append every dispatch of each step to `into` (emptied as a step starts, so the last step's remain),
   * or stop with undefined; returns the arena that holds their params (kernels/runtime/step-profile.ts).
   */
  recordDispatches(into: DispatchRecord[] | undefined): ParamArena {
    this.arena.recorder = into;
    return this.arena;
  }

  /** Whether sampled row r is token r for every row (each sequence one token, in order). */
  private rowsAreTokens(R: number): boolean {
    for (let r = 0; r < R; r++) if (this.lastIndex[r] !== r) return false;
    return true;
  }

  sampled(row: number): { token: number; logprob: number } {
    return { token: this.sampledU32[row * SAMPLE_OUT_WORDS], logprob: this.sampledF32[row * SAMPLE_OUT_WORDS + 1] };
  }

  candidates(row: number): TopKRow {
    return readTopKRow(this.topkU32, this.topkF32, row);
  }

  /** Bytes of the step's scratch buffers: activations, outputs, and the KV mirror as large as it has grown. */
  get workspaceBytes(): number {
    return this.ws.bytes + (this.kvMirror?.bytes ?? 0);
  }

  destroy(): void {
    this.ws.destroy();
    this.arena.buffer.destroy();
    this.ropeFactorsDummy?.destroy();
    this.attnSplit?.partials.destroy();
    this.serialSplit?.partials.destroy();
    this.serialSplit?.counters.destroy();
    this.tailCounter?.destroy();
    this.chains?.destroy();
    this.kvMirror?.destroy();
    this.logitsRead?.destroy();
  }
}
