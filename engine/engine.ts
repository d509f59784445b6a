/**
 * The engine: a model's weights, KV cache and forward pass on one GPU device, with a scheduler that
 * batches concurrent generations. Platform-free: Node and browsers hand it a device and a ModelSource.
 */
import { yieldToHost } from './platform/yield.ts';
import type { GrammarCompiler } from './grammar/handle.ts';
import { readModelConfig } from './arch/index.ts';
import type { ModelConfig } from './arch/types.ts';
import { resolveOptions } from './generate/options.ts';
import { Scheduler } from './generate/scheduler.ts';
import { Sequence } from './generate/sequence.ts';
import type { SelectedDevice } from './gpu/select.ts';
import { parseGguf, type GgufFile } from './gguf/parse.ts';
import { attentionPositionLimit } from '../kernels/attention.ts';
import { kvFormatFor, kvValueBytes, type KvFormat } from '../kernels/kv-format.ts';
import { PagedKvCache } from './kv/paged-cache.ts';
import { PrefixCache, type PrefixCacheStats } from './kv/prefix-cache.ts';
import type { KvMirrorOptions } from './kv/kv-mirror.ts';
import type { ModelSource } from './loader/source.ts';
import { loadWeights, type LoadProgress } from './model/load-weights.ts';
import type { MatrixKernels } from './model/matrix.ts';
import { Transformer } from './model/transformer.ts';
import type { ModelWeights } from './model/weights.ts';
import { createTokenizer } from './tokenizer/index.ts';
import type { Tokenizer } from './tokenizer/types.ts';
import { EngineInputError, type AdapterHandle, type GenerateOptions, type Generation, type GenerationResult, type LoadAdapterOptions, type ModelInfo, type TextEngine } from './types.ts';
import { BytesSource } from './loader/source.ts';
import { AdapterRegistry, type AdapterLease } from './lora/registry.ts';
import { MAX_MATVEC_T } from '../kernels/matvec.ts';
import { XQ8_WIDE_TOKENS } from '../kernels/matmul.ts';
import { KernelContext } from '../kernels/runtime/context.ts';
import type { DispatchRecord } from '../kernels/runtime/arena.ts';
import { profileStep, type StepProfile } from '../kernels/runtime/step-profile.ts';
import { createMatrixKernels } from './model/matrix-kernels.ts';

export interface EngineOptions {
  /** Context window to run with (default: the model's, capped at 4096). */
  contextLength?: number;
  /** Sequences decoded together (default 8). */
  maxSequences?: number;
  /**
   * Most tokens in one forward step (default 512 on GPUs, as llama.cpp's physical batch; on software
   * adapters 256 where submit runs the work on this thread (llvmpipe, which yields between segments of
   * layers), else 96). On a GPU each step costs the host 10-15 us a dispatch to encode whatever its
   * tokens (an H200's host: ~3 ms for a SmolLM2-135M prefill step of 245 dispatches, a quarter of the
   * step's kernels at 256 tokens), so a prompt in fewer steps pays it fewer times; on llvmpipe a
   * 512-token prompt alone took 2.55 s in steps of 64, 2.37 in 128, 2.28 in 192 or 256 (SmolLM2-135M on
   * the 2-core machine). A step that decodes other sequences keeps to decodingStepTokens.
   */
  maxTokensPerStep?: number;
  /**
   * A prompt longer than a step's room goes in chunks of this many tokens (default maxTokensPerStep; 64
   * on SwiftShader); one whose rest fits the room goes whole. A prompt of 65-80 tokens then takes one step
   * instead of 64 + a short one (TTFT of 72 tokens on llvmpipe: 362-380 -> 325-335 ms, SmolLM2-135M on
   * the 2-core machine), while a step that carries other sequences' decode rows stays within one chunk.
   */
  prefillChunkTokens?: number;
  /**
   * The most tokens of a step that also decodes other sequences (default maxTokensPerStep; 96 on software
   * adapters where maxTokensPerStep is not given): a long prompt then goes beside running sequences in
   * steps they can wait for (on llvmpipe about 0.4 s for 96 tokens of SmolLM2-135M, where a step of 256
   * would hold each of their tokens back about a second).
   */
  decodingStepTokens?: number;
  /** GPU memory for the KV cache (default 512 MiB, at least one full-context sequence). */
  kvCacheBytes?: number;
  /** Positions per KV page (default 16). */
  pageSize?: number;
  /**
   * How the KV cache holds values (kernels/kv-format.ts). 'auto' (default): half precision on CPU
   * rasterisers where their kernels take the model's heads (half the memory and of attention's loads, as
   * llama.cpp's default f16 cache), f32 elsewhere. 'f32' everywhere (what llama.cpp computes with an f32
   * cache); 'f16' fails where it cannot be had.
   */
  kvCache?: 'auto' | KvFormat;
  /**
   * Share the KV pages of common prompt prefixes between requests (default true): a request whose
   * prompt begins with tokens an earlier one computed skips their prefill (full pages shared, the start
   * of the next page copied). Cached pages no request
   * uses are evicted, least recently used first, whenever a request needs the room.
   */
  prefixCache?: boolean;
  /**
   * Where submit does the work on this thread (llvmpipe): about how long the thread may be held before
   * the step yields to other work (default 16 ms; 0 yields after every layer). See SegmentPlanner.
   */
  yieldEveryMs?: number;
  /**
   * Pipelined decode: while every running sequence only decodes (no grammar, penalties or CPU-side
   * top-k/top-p), the next step is submitted, fed the sampled ids on the GPU, before this one is read.
   * Default: on, except where submit runs the work on the calling thread (llvmpipe), where the next
   * step would run before this step's tokens reach the caller and there is nothing to overlap.
   */
  pipelinedDecode?: boolean;
  /**
   * The last layer past its KV store runs on the rows a step samples only, as llama.cpp's does (default
   * true); false runs every token of the step through it, to compare.
   */
  pruneLastLayer?: boolean;
  /**
   * On GPUs, decode-sized steps fold the RMSNorm before the QKV, gate|up and head products into them
   * (default true): a dispatch less each, for host-bound steps; the folded products read the norm weight
   * beside x, so a step bound by the GPU may do better with the norm passes (false). For the lab.
   */
  fuseNorms?: boolean;
  /**
   * On GPUs, a step's attention spreads each (token, head) pair's positions over several workgroups and
   * merges their sums in a combine pass (flash-decoding; AttentionKernel.splitsFor) once its longest
   * sequence attends to at least this many positions (default 256, or 2048 for models of under 16 MiB
   * of weights a layer, whose steps the host's encoding bounds: gpuSplitAttentionFrom); false never
   * splits. A decode token's few heads are otherwise a few workgroups, each walking every position. On llvmpipe, decode-sized
   * steps (up to maxSequences tokens) split from 128 positions by default, over invocations whose last
   * merges them, with no dispatch added (AttentionKernel.serialSplitsFor, attention-serial-split.wgsl).
   */
  splitAttentionFrom?: number | false;
  /**
   * On GPUs, steps holding many tokens of each sequence (prefill) run attention in tiles of consecutive
   * tokens, each position's K and V staged once for a tile's tokens and query heads
   * (kernels/attention-tiled.wgsl; default true); false keeps a workgroup per token and query head.
   */
  tiledAttention?: boolean;
  /**
   * The fewest workgroups (tiles of tokens x KV heads) a step's tiled attention must make, else it keeps
   * a workgroup per token and query head (default 256; 0: any step that tiles, for tests). A model of
   * few KV heads makes few tiles: on an H200, SmolLM2-135M's 3 KV heads made 96 for a 512-token step,
   * and its 1023-token prompt took 60 ms to first token tiled against 42 ms untiled.
   */
  tiledAttentionMinWorkgroups?: number;
  /**
   * On GPUs offering subgroups and dot4I8Packed, Q8_0 decode products quantize x to int8 blocks as
   * llama.cpp's backends do and sum them with integer dot products (kernels/matvec-dp4a.wgsl; default
   * true); false keeps the float kernel. For the lab.
   */
  int8Dot?: boolean;
  /**
   * On llvmpipe, decode products run the pass after them (the next norm, the gated activation, RoPE +
   * KV store) in their own last invocations instead of a dispatch of its own (kernels/matvec-tail.ts),
   * with the same results to the bit (default true; other adapters run those passes as their own
   * dispatches or fused otherwise: GpuCaps.orderedAtomics). False keeps every pass its own dispatch.
   */
  productTails?: boolean;
  /**
   * On llvmpipe with its compute threads pinned (engine/platform/worker-pinning.ts), decode steps run each
   * layer's O, gate|up and down products with their tails in one dispatch of persistent workgroups, one a
   * thread, meeting at grid barriers, and its Q|K|V product with attention in another
   * (engine/model/layer-chains.ts), three dispatches fewer a layer, with the
   * same results to the bit (default true; needs productTails, and decode unpipelined: a step whose
   * barrier gave up is run again one dispatch a product). False keeps a dispatch a product.
   */
  productChains?: boolean;
  /**
   * With productChains: the loop passes (each a few reads of the barrier's count, about 0.1 µs) a chain's
   * workgroup waits at its barriers before it gives up and the step runs again one dispatch a product.
   * Default: what llvmpipe's loop budget leaves after the chain's products (tens of thousands).
   */
  chainWaitPasses?: number;
  /**
   * With productChains: workgroups a chain runs (default: llvmpipe's pinned compute threads; none where
   * they could not be pinned). Only to test: chains without pinning (correct, but a barrier may wait on a
   * thread that shares a CPU), or more workgroups than threads, which makes every barrier wait in vain
   * and every chained step run again.
   */
  chainWorkgroups?: number;
  /**
   * On llvmpipe, steps in which many tokens read the same earlier KV rows (a prompt's chunk after a long
   * prefix) gather each layer's rows into textures that attention reads instead of the paged cache
   * (engine/kv/kv-mirror.ts), with the same results to the bit. Default true; false always reads the
   * cache; the thresholds are for tests.
   */
  kvMirror?: boolean | KvMirrorOptions;
  /** LoRA adapters loaded at once (default 16). */
  maxAdapters?: number;
  /** Most bytes of one LoRA adapter's weights as F32 (default 1 GiB). */
  maxAdapterBytes?: number;
  onProgress?: LoadProgress;
}

export interface EngineStats {
  adapter: string;
  /** Where the adapter's worker threads run (llvmpipe in Node: platform/worker-pinning.ts), or null. */
  workerThreads: string | null;
  weightsBytes: number;
  kvCacheBytes: number;
  /** How the KV cache holds values (kernels/kv-format.ts). */
  kvFormat: KvFormat;
  workspaceBytes: number;
  /** Weight stores (buffers, or textures on llvmpipe) holding weight matrices and vectors (more than one per matrix when a matrix exceeds a binding). */
  weightShards: number;
  /** Dispatches in the last step (a decode step of one sequence = dispatches per token). */
  lastStepDispatches: number;
  /**
   * Layers whose FFN, and whose Q|K|V product with attention, decode steps run in one dispatch each
   * (EngineOptions.productChains), and the steps run again because a chain's barrier gave up.
   */
  chains: { ffnLayers: number; qkvLayers: number; retries: number };
  activeSequences: number;
  waitingSequences: number;
  /** KV cache pages: all of them, and those no sequence and no prefix-cache entry holds. */
  kvPages: { total: number; free: number };
  /**
   * Steps run so far, their total wall time, the part of it in which the device had no work, how many
   * were submitted before the step they follow was read (pipelined decode), and of the wall time the
   * host's encoding up to each submit (hostMs), the submit calls (submitMs) and its waiting for the
   * steps' samples (waitMs).
   */
  steps: { count: number; ms: number; deviceIdleMs: number; pipelined: number; hostMs: number; submitMs: number; waitMs: number };
  /** The prefix cache's counters, or null when it is off. */
  prefixCache: PrefixCacheStats | null;
  /** LoRA adapters loaded now. */
  adapters: number;
}

export class WebGpuEngine implements TextEngine {
  private nextId = 1;
  private disposed = false;
  private readonly resultListeners = new Set<(result: GenerationResult) => void>();
  /** Set by the platform's loader (engine/node.ts: grammar workers); in-thread grammars when absent. */
  grammars: GrammarCompiler | undefined;
  private readonly loras: AdapterRegistry;

  private constructor(
    readonly info: ModelInfo,
    readonly config: ModelConfig,
    readonly tokenizer: Tokenizer,
    private readonly selected: SelectedDevice,
    private readonly weights: ModelWeights,
    private readonly cache: PagedKvCache,
    private readonly transformer: Transformer,
    private readonly scheduler: Scheduler,
    private readonly ctx: KernelContext,
    opts: EngineOptions,
  ) {
    this.loras = new AdapterRegistry({
      ctx,
      cfg: config,
      maxAdapters: opts.maxAdapters ?? 16,
      maxTokensPerStep: transformer.maxTokensPerStep,
      maxAdapterBytes: opts.maxAdapterBytes,
      lock: scheduler.lock,
      enable: (pool) => transformer.enableLora(pool),
      unloaded: (id) => scheduler.prefixCache?.dropSpace(id),
    });
  }

  static async load(selected: SelectedDevice, source: ModelSource, opts: EngineOptions = {}): Promise<WebGpuEngine> {
    const maxAdapters = opts.maxAdapters ?? 16;
    if (!Number.isInteger(maxAdapters) || maxAdapters < 1 || maxAdapters > 1024) throw new Error(`maxAdapters must be an integer in 1..1024 (got ${opts.maxAdapters})`);
    const gguf: GgufFile = await parseGguf(source);
    const cfg = readModelConfig(gguf.metadata, new Set(gguf.tensors.map((t) => t.name)));
    const tokenizer = createTokenizer(gguf.metadata);
    if (tokenizer.vocabSize !== cfg.vocabSize) {
      throw new Error(`${source.name}: tokenizer has ${tokenizer.vocabSize} tokens but the model's vocabulary is ${cfg.vocabSize}`);
    }
    const ctx = new KernelContext(selected.device, selected.caps);
    // Output widths of a layer's products (stacked QKV, O, gate|up, down), which size the tiled kernels' register blocks.
    const widths = [(cfg.nHeads + 2 * cfg.nKvHeads) * cfg.headDim, cfg.dim, 2 * cfg.ffnDim, cfg.dim];
    const matrices: MatrixKernels = createMatrixKernels(ctx, { tails: opts.productTails ?? true, widths, int8Dot: opts.int8Dot });
    const contextLength = Math.min(cfg.contextLength, opts.contextLength ?? 4096);
    if (!(contextLength >= 2)) throw new Error(`contextLength must be at least 2 (got ${opts.contextLength})`);
    const positionLimit = attentionPositionLimit(selected.caps, cfg.headDim);
    if (contextLength > positionLimit) {
      throw new Error(
        `contextLength ${contextLength} is more than attention can cover on this adapter: ${positionLimit} positions (llvmpipe stops a shader after ${selected.caps.loopBudget} loop iterations); ask for a shorter context or use another adapter`,
      );
    }
    const maxSequences = opts.maxSequences ?? 8;
    const softwareSteps = selected.caps.software && opts.maxTokensPerStep === undefined;
    const maxTokensPerStep = opts.maxTokensPerStep ?? (selected.caps.software ? (selected.blockingSubmit ? 256 : 96) : 512);
    const prefillChunkTokens = Math.min(opts.prefillChunkTokens ?? (softwareSteps && !selected.blockingSubmit ? 64 : maxTokensPerStep), maxTokensPerStep);
    const decodingStepTokens = Math.min(opts.decodingStepTokens ?? (softwareSteps ? 96 : maxTokensPerStep), maxTokensPerStep);
    for (const [name, v] of [['maxTokensPerStep', maxTokensPerStep], ['prefillChunkTokens', prefillChunkTokens], ['decodingStepTokens', decodingStepTokens]] as const) {
      if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive whole number (got ${v})`);
    }
    const pageSize = opts.pageSize ?? 16;
    const kvDim = cfg.nKvHeads * cfg.headDim;
    const kvFormat = kvFormatFor(selected.caps, { headDim: cfg.headDim, nRot: cfg.rope.nRot }, opts.kvCache);
    const valueBytes = kvValueBytes(kvFormat);
    const fullContextBytes = 2 * cfg.nLayers * contextLength * kvDim * valueBytes;
    const weights = await loadWeights(ctx, gguf, source, cfg, matrices, opts.onProgress);
    const cache = new PagedKvCache(ctx, {
      layers: cfg.nLayers,
      kvDim,
      pageSize,
      maxSeqs: maxSequences,
      maxSeqLength: contextLength,
      budgetBytes: Math.max(opts.kvCacheBytes ?? 512 * 2 ** 20, fullContextBytes + 2 * cfg.nLayers * pageSize * kvDim * valueBytes),
      format: kvFormat,
    });
    const pipelined = opts.pipelinedDecode ?? !selected.blockingSubmit;
    // One persistent workgroup to each of llvmpipe's compute threads, which need to be pinned one to a CPU.
    const pinned = selected.workerPinning?.pinned.length ?? 0;
    const chainWorkers = (opts.productChains ?? true) && (opts.productTails ?? true) ? (opts.chainWorkgroups ?? pinned) : 0;
    const transformer = new Transformer(ctx, cfg, weights, cache, matrices, { maxTokensPerStep, prefillChunkTokens, decodingStepTokens, maxRowsPerStep: maxSequences, yieldEveryMs: opts.yieldEveryMs, kvMirror: opts.kvMirror, fuseNorms: opts.fuseNorms, splitAttentionFrom: opts.splitAttentionFrom, tiledAttention: opts.tiledAttention, tiledAttentionMinWorkgroups: opts.tiledAttentionMinWorkgroups, chainWorkers, chainSpinBudget: opts.chainWaitPasses }, selected.blockingSubmit ? yieldToHost : undefined);
    transformer.pruneLastLayer = opts.pruneLastLayer ?? true;
    transformer.chainsAllowed = !pipelined;
    await ctx.checkKernels();
    const scheduler = new Scheduler(transformer, cache.allocator, () => cache.syncPageTable(), undefined, {
      pipeline: pipelined,
      submitBlocks: selected.blockingSubmit,
    });
    let parameterCount = 0;
    for (const t of gguf.tensors) parameterCount += t.elements;
    const info: ModelInfo = {
      name: gguf.metadata.optionalString('general.name') ?? source.name.split(/[\\/]/).pop() ?? source.name,
      architecture: cfg.architecture,
      contextLength,
      vocabSize: cfg.vocabSize,
      parameterCount,
      chatTemplate: gguf.metadata.optionalString('tokenizer.chat_template'),
      source: source.name,
    };
    await source.close?.();
    const engine = new WebGpuEngine(info, cfg, tokenizer, selected, weights, cache, transformer, scheduler, ctx, opts);
    engine.setPrefixCache(opts.prefixCache ?? true);
    return engine;
  }

  /**
   * Turn prefix sharing on or off (EngineOptions.prefixCache). Turning it off drops every cached page
   * no request is using; running requests keep the pages they share.
   */
  setPrefixCache(enabled: boolean): void {
    const current = this.scheduler.prefixCache;
    if (enabled === (current !== undefined)) return;
    const pages = this.cache.allocator;
    if (enabled) {
      const prefix = new PrefixCache(pages);
      pages.reclaimer = (n) => void prefix.evict(n);
      this.scheduler.prefixCache = prefix;
    } else {
      current!.clear();
      pages.reclaimer = undefined;
      this.scheduler.prefixCache = undefined;
    }
  }

  /** Turn pipelined decode on or off (EngineOptions.pipelinedDecode); takes effect from the next step. */
  setPipelinedDecode(enabled: boolean): void {
    this.scheduler.pipeline = enabled;
    this.transformer.chainsAllowed = !enabled;
  }

  get pipelinedDecode(): boolean {
    return this.scheduler.pipeline;
  }

  /** Resolves once the engine has no step running or due (all generations settled). */
  whenIdle(): Promise<void> {
    return this.scheduler.whenIdle();
  }

  /** Starts a generation. Invalid options throw EngineInputError at once (naming the option). */
  generate(options: GenerateOptions): Generation {
    return this.start(options, false);
  }

  private start(options: GenerateOptions, uncached: boolean): Generation {
    if (this.disposed) throw new Error('engine has been disposed');
    const o = resolveOptions(options);
    const prompt = this.promptTokens(options);
    const ctx = this.info.contextLength;
    if (prompt.length >= ctx) {
      throw new EngineInputError(`prompt is ${prompt.length} tokens; the context holds ${ctx} tokens including at least one generated token`, options.tokens ? 'tokens' : 'prompt');
    }
    const seq = new Sequence(this.nextId++, prompt, o, Math.min(ctx, prompt.length + o.maxTokens), this.tokenizer, options.constraint);
    seq.uncached = uncached;
    if (options.adapter !== undefined) this.runWithAdapter(seq, this.loras.acquire(options.adapter));
    const signal = options.signal;
    if (signal) {
      if (signal.aborted) {
        seq.finish('aborted');
        return seq.queue;
      }
      const onAbort = () => this.scheduler.abort(seq);
      signal.addEventListener('abort', onAbort, { once: true });
      seq.queue.result.finally(() => signal.removeEventListener('abort', onAbort)).catch(() => {});
    }
    this.scheduler.submit(seq);
    if (this.resultListeners.size > 0) seq.queue.result.then((r) => this.resultListeners.forEach((cb) => cb(r)), () => {});
    return seq.queue;
  }

  /** The sequence runs with the leased adapter, and gives the lease back when it ends however it ends. */
  private runWithAdapter(seq: Sequence, lease: AdapterLease): void {
    seq.adapter = { slot: lease.slot, id: lease.id };
    seq.queue.result.finally(() => lease.release()).catch(() => {});
  }

  /**
   * Load a LoRA adapter in llama.cpp's GGUF format (file bytes or a source) for GenerateOptions.adapter.
   * The file is checked against this model first: architecture, targets, shapes, ranks (EngineInputError
   * naming the tensor at fault). The base weights are never changed: sequences with different adapters
   * and none share each step.
   */
  async loadAdapter(source: ModelSource | Uint8Array, opts: LoadAdapterOptions = {}): Promise<AdapterHandle> {
    if (this.disposed) throw new Error('engine has been disposed');
    return this.loras.load(source instanceof Uint8Array ? new BytesSource(source, opts.name ?? '(bytes)') : source, opts);
  }

  /**
   * Unload an adapter: from the call on, generations naming it are refused; the promise resolves once
   * the generations already running with it have ended (it waits, it does not abort them) and its GPU
   * memory and prefix-cache pages are freed.
   */
  unloadAdapter(id: string): Promise<void> {
    return this.loras.unload(id);
  }

  /** The adapters loaded now (including any being unloaded). */
  adapters(): AdapterHandle[] {
    return this.loras.list();
  }

  /** Calls `cb` with every generation's result (token counts, timings) as it finishes; returns an unsubscribe. */
  onGenerationResult(cb: (result: GenerationResult) => void): () => void {
    this.resultListeners.add(cb);
    return () => this.resultListeners.delete(cb);
  }

  private promptTokens(options: GenerateOptions): number[] {
    if ((options.prompt === undefined) === (options.tokens === undefined)) {
      throw new EngineInputError('give exactly one of prompt or tokens', 'prompt');
    }
    if (options.tokens !== undefined) {
      const V = this.info.vocabSize;
      const bad = options.tokens.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= V);
      if (bad >= 0) throw new EngineInputError(`tokens[${bad}] = ${options.tokens[bad]} is not a token id (0..${V - 1})`, 'tokens');
      if (options.tokens.length === 0) throw new EngineInputError('tokens is empty', 'tokens');
      return [...options.tokens];
    }
    if (typeof options.prompt !== 'string') throw new EngineInputError('prompt must be a string', 'prompt');
    const tokens = this.tokenizer.encode(options.prompt);
    if (tokens.length === 0) throw new EngineInputError('prompt is empty and the model adds no BOS token', 'prompt');
    return tokens;
  }

  /**
   * Diagnostics: the logits after each token of `tokens` (a fresh sequence), for comparing the engine
   * with a float reference. Not for serving: it reads back whole logit vectors. Steps of `stepTokens`
   * tokens (default and most: maxSequences, the rows a step samples): steps of a few tokens run the
   * decode products, steps of more than 8 the prefill tiles, so a check can hold each to the reference.
   */
  async logits(tokens: readonly number[], opts: { adapter?: string; stepTokens?: number } = {}): Promise<Float32Array[]> {
    if (tokens.length === 0 || tokens.length > this.info.contextLength) throw new EngineInputError(`logits needs 1..${this.info.contextLength} tokens`, 'tokens');
    const most = Math.min(this.transformer.maxRowsPerStep, this.transformer.maxTokensPerStep);
    const step = opts.stepTokens ?? most;
    if (!Number.isInteger(step) || step < 1 || step > most) throw new EngineInputError(`stepTokens must be a whole number in 1..${most} (the rows a step samples)`, 'stepTokens');
    const pages = this.cache.allocator;
    const lease = opts.adapter !== undefined ? this.loras.acquire(opts.adapter) : undefined;
    const adapterSlot = lease?.slot ?? -1;
    return this.scheduler.lock.run(async () => {
      const slot = pages.acquireSlot();
      if (slot === undefined) throw new Error('no free sequence slot for diagnostics');
      try {
        if (!pages.reserve(slot, tokens.length)) throw new Error('no free KV pages for diagnostics');
        this.cache.syncPageTable();
        const out: Float32Array[] = [];
        const tr = this.transformer;
        tr.captureLogits = true;
        for (let start = 0; start < tokens.length; start += step) {
          const n = Math.min(step, tokens.length - start);
          tr.begin();
          for (let i = 0; i < n; i++) {
            const t = tr.addToken(tokens[start + i], start + i, slot, adapterSlot);
            tr.addRow(t, { temperature: 0, seed: 0, counter: 0, mask: null, penalties: null, candidates: false });
          }
          await tr.run();
          for (let i = 0; i < n; i++) out.push(tr.logitsOf(i));
        }
        return out;
      } finally {
        this.transformer.captureLogits = false;
        pages.release(slot);
        this.cache.syncPageTable();
      }
    }).finally(() => lease?.release());
  }

  /**
   * Runs one short greedy generation (a prefill, then a decode step) so the device builds the pipelines
   * of both before the first request: browsers, Dawn and llvmpipe compile a pipeline on its first use,
   * which otherwise lands on the first caller's time to first token (seconds for the CPU rasterisers'
   * tiled products). The prefills have more tokens than any matrix-vector kernel takes, so they run the
   * tiled products: in their short-step form, and in the wider one SwiftShader uses for long steps and
   * llvmpipe's texture-x products use where their grid stays wide (kernels/matmul.ts XQ8_WIDE_TOKENS).
   */
  async warmUp(): Promise<void> {
    const encoded = this.tokenizer.encode('Once upon a time');
    const words = encoded.length > 0 ? encoded : [0];
    // The tiled products in both widths, and a full-length step: where a step's x outgrows a uniform
    // window (kernels/matmul-x-window.ts), its products read storage x through pipelines no shorter step
    // builds, and a first compile on llvmpipe takes seconds.
    const lengths = new Set([MAX_MATVEC_T + 1, XQ8_WIDE_TOKENS, this.transformer.maxTokensPerStep].filter((n) => n + 2 <= this.info.contextLength));
    for (const length of lengths) {
      const tokens = Array.from({ length }, (_, i) => words[i % words.length]);
      // Outside the prefix cache: a full page of warm-up tokens would stay listed, and no request shares it.
      await this.start({ tokens, maxTokens: 2, temperature: 0, stopAtEndOfGeneration: false }, true).result;
    }
    // Some pipelines are made on first use (the wide tiled products).
    await this.ctx.checkKernels();
  }

  /**
   * Where a step's time goes, kernel by kernel, for the bench: runs `options` to its end with the
   * steps' dispatches recorded, then times the last step's again (kernels/runtime/step-profile.ts):
   * `maxTokens: 1` profiles a prefill step, more a decode step. Replaying rewrites the step's KV rows and
   * residual stream, so it needs the prefix cache off (no cached page may change), and outputs of this
   * engine are not to be trusted afterwards.
   */
  async profileLastStep(options: GenerateOptions): Promise<StepProfile> {
    if (this.scheduler.prefixCache) throw new EngineInputError('profileLastStep needs an engine loaded with prefixCache: false (replaying a step rewrites KV rows the cache shares)');
    const records: DispatchRecord[] = [];
    const arena = this.transformer.recordDispatches(records);
    try {
      await this.generate(options).result;
    } finally {
      this.transformer.recordDispatches(undefined);
    }
    return profileStep(this.ctx, arena, records, () => this.transformer.chains?.upload(this.ctx.device.queue));
  }

  stats(): EngineStats {
    const t = this.scheduler.stepTiming;
    return {
      adapter: this.selected.choice,
      workerThreads: this.selected.workerPinning?.reason ?? null,
      weightsBytes: this.weights.bytes,
      kvCacheBytes: this.cache.bytes,
      kvFormat: this.cache.format,
      workspaceBytes: this.transformer.workspaceBytes,
      weightShards: this.weights.buffers.length,
      lastStepDispatches: this.transformer.lastDispatches,
      chains: { ffnLayers: this.transformer.chains?.ffnLayers ?? 0, qkvLayers: this.transformer.chains?.qkvLayers ?? 0, retries: this.transformer.chains?.retries ?? 0 },
      activeSequences: this.scheduler.activeCount,
      waitingSequences: this.scheduler.waitingCount,
      prefixCache: this.scheduler.prefixCache?.stats() ?? null,
      kvPages: { total: this.cache.allocator.numPages, free: this.cache.allocator.freePages },
      steps: { count: t.steps, ms: t.ms, deviceIdleMs: t.deviceIdleMs, pipelined: t.pipelined, hostMs: t.hostMs, submitMs: t.submitMs, waitMs: t.waitMs },
      adapters: this.loras.count,
    };
  }

  /**
   * For the LoRA trainer (engine/train/gpu/): the device, the loaded weights as they sit on the GPU, and
   * the scheduler's lock, so a training step runs between inference steps instead of racing them.
   */
  trainingAccess(): { device: SelectedDevice; config: ModelConfig; weights: ModelWeights; runExclusive<T>(fn: () => Promise<T>): Promise<T> } {
    if (this.disposed) throw new Error('engine has been disposed');
    return { device: this.selected, config: this.config, weights: this.weights, runExclusive: (fn) => this.scheduler.lock.run(fn) };
  }

  get device(): SelectedDevice {
    return this.selected;
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.grammars?.dispose?.();
    await this.selected.device.queue.onSubmittedWorkDone();
    this.transformer.destroy();
    this.loras.destroy();
    this.cache.destroy();
    for (const b of this.weights.buffers) b.destroy();
    this.selected.device.destroy();
  }
}
