/**
 * WebLLM's engine interface (`MLCEngineInterface` of @mlc-ai/web-llm 0.2.86) on our engine, so that
 * WebLLM's own worker handlers host it (worker-host.ts, service-worker-host.ts) and pages written against
 * WebLLM's client API (`CreateWebWorkerMLCEngine`, `CreateServiceWorkerMLCEngine`,
 * `engine.chat.completions.create`, …) run on it unchanged but for the model id. It can also be used
 * directly in a page, as an `MLCEngine` would be.
 *
 * - reload(modelId) finds the id's record in the app config (`setAppConfig`, which the WebLLM client
 *   sends from `engineConfig.appConfig`): `{ model_id, model: '<URL of a .gguf>', model_lib?: ignored,
 *   overrides?: ChatOptions }`; else the site's own model (svc-web.json `model.id`). It then starts the
 *   whole in-browser service (LocalService: model in Cache Storage, engine on navigator.gpu, protocol,
 *   a local account) with the plans, specialists and version of svc-web.json (fetched beside the host
 *   script, or given to the constructor), and reports WebLLM InitProgressReports.
 * - chat.completions.create runs through the in-process client on the `chat` specialist (the service's
 *   validation, grammars, tools and limits apply); the answer comes back in WebLLM's shapes (model id,
 *   finish_reason 'abort' after interruptGenerate(), `usage.extra` timings, usage chunk only when asked).
 * - completions.create (raw text, no chat template) and forwardTokensAndSample run on the engine itself.
 * - Requests run one at a time, as WebLLM's do per model: interruptGenerate() stops the running one,
 *   runtimeStatsText() sums the requests since the last resetChat().
 * - Embeddings, resumable sessions, logit processors and multi-model loads are refused with an error
 *   naming them (UnsupportedFeatureError).
 *
 * WebLLM itself is only a type here: its runtime (TVM, tokenizers, its MLCEngine) is not imported.
 * docs/webllm.md has the record shape, what maps to what, and what differs.
 */
import type {
  AppConfig,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatCompletionRequestBase,
  ChatCompletionRequestNonStreaming,
  ChatCompletionRequestStreaming,
  ChatOptions,
  Completion,
  CompletionCreateParams,
  CompletionCreateParamsBase,
  CompletionCreateParamsNonStreaming,
  CompletionCreateParamsStreaming,
  CompletionUsage,
  CreateEmbeddingResponse,
  EmbeddingCreateParams,
  InitProgressCallback,
  LogitProcessor,
  LogLevel,
  MLCEngineInterface,
  ModelRecord,
  ResumeChatCompletionOptions,
  ResumeProbeResult,
  ResumeResult,
} from '@mlc-ai/web-llm';
import type * as API from '@mlc-ai/web-llm';
import type { WebGpuEngine } from '../../engine/engine.ts';
import type { GenerateOptions, GenerationResult } from '../../engine/types.ts';
import { ApiError } from '../../protocol/errors.ts';
import type { Logger } from '../../protocol/logger.ts';
import { assembleMessage, type Delta } from '../../protocol/output/reader.ts';
import { parseChatRequest } from '../../protocol/requests/chat.ts';
import { createClient, ServiceError, type JsonObject, type SvcClient } from '../in-process/client.ts';
import { LocalService } from '../service-worker/local-service.ts';
import { parseWebConfig, WEB_CONFIG_FILE, type WebConfig } from '../service-worker/web-config.ts';
import { progressReporter } from './progress.ts';

/** The specialist chat completions run on (WebLLM's `model` names the weights, not a specialist). */
const CHAT_MODEL = 'svc-chat';
/** What a request without max_tokens gets: WebLLM generates until the end or the context is full; our API caps max_tokens at 4096 and clamps it to the context. */
const CHAT_MAX_TOKENS = 4096;
/** Sampling for completions and forwardTokensAndSample when neither the request nor the model's overrides set it (the chat specialist's defaults). */
const DEFAULT_TEMPERATURE = 0.7;
const DEFAULT_TOP_P = 1;

/** A WebLLM feature this engine does not have; the message names it. */
export class UnsupportedFeatureError extends Error {
  constructor(feature: string, detail = '') {
    super(`${feature} is not supported by svc's WebLLM-compatible engine${detail ? `: ${detail}` : '.'}`);
    this.name = 'UnsupportedFeatureError';
  }
}

export interface SvcMLCEngineOptions {
  /**
   * The service's configuration: a WebConfig, or the URL of an svc-web.json (written by `svc web build`).
   * Default: svc-web.json beside the script that runs the engine (`location.href`), fetched at each reload.
   */
  webConfig?: WebConfig | string | URL;
  /** IndexedDB database for the local account's usage; default null (memory only). */
  dbName?: string | null;
  /** Same as WebLLM's engineConfig (in a worker, the client's setAppConfig/setLogLevel arrive as messages). */
  appConfig?: AppConfig;
  initProgressCallback?: InitProgressCallback;
  logLevel?: LogLevel;
}

interface Loaded {
  modelId: string;
  local: LocalService;
  engine: WebGpuEngine;
  client: SvcClient;
  /** The record's overrides with the reload's chatOpts on top (WebLLM's order). */
  options: ChatOptions;
}

/** One running request: what interruptGenerate() stops, and where the engine's result for it lands. */
interface Run {
  controller: AbortController;
  interrupted: boolean;
  result?: GenerationResult;
  receivedAt: number;
}

interface Stats {
  prefillTokens: number;
  prefillMs: number;
  decodeTokens: number;
  decodeMs: number;
}

const ZERO_STATS: Stats = { prefillTokens: 0, prefillMs: 0, decodeTokens: 0, decodeMs: 0 };

const LOG_ORDER: Record<LogLevel, number> = { TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4, SILENT: 5 };

export class SvcMLCEngine implements MLCEngineInterface {
  readonly chat: API.Chat;
  readonly completions: API.Completions;
  readonly embeddings: API.Embeddings;

  private appConfig: AppConfig | undefined;
  private initProgressCallback: InitProgressCallback | undefined;
  private logLevel: LogLevel = 'WARN';
  private loaded: Loaded | undefined;
  /** Bumped by every reload() and unload(): a load that finishes after a newer call is discarded. */
  private loadToken = 0;
  private queue: Promise<void> = Promise.resolve();
  private current: Run | undefined;
  private stats: Stats = { ...ZERO_STATS };
  private message = '';
  /** forwardTokensAndSample's sequence so far (the engine is stateless; its prefix cache keeps this cheap). */
  private forwarded: number[] = [];

  constructor(private readonly opts: SvcMLCEngineOptions = {}) {
    this.appConfig = opts.appConfig;
    this.initProgressCallback = opts.initProgressCallback;
    if (opts.logLevel) this.logLevel = opts.logLevel;
    // WebLLM's Chat/Completions/Embeddings classes only forward to these methods; plain objects do the
    // same without importing WebLLM's runtime.
    this.chat = { completions: { create: (r: ChatCompletionRequest) => this.chatCompletion(r) } } as unknown as API.Chat;
    this.completions = { create: (r: CompletionCreateParams) => this.completion(r) } as unknown as API.Completions;
    this.embeddings = { create: (r: EmbeddingCreateParams) => this.embedding(r) } as unknown as API.Embeddings;
  }

  // ---- settings -------------------------------------------------------------------------------------

  setInitProgressCallback(cb: InitProgressCallback | undefined): void {
    this.initProgressCallback = cb;
  }

  getInitProgressCallback(): InitProgressCallback | undefined {
    return this.initProgressCallback;
  }

  setAppConfig(appConfig: AppConfig): void {
    this.appConfig = appConfig;
  }

  setLogLevel(logLevel: LogLevel): void {
    this.logLevel = logLevel;
  }

  /** WebLLM runs these on the CPU over whole logit vectors; our sampling runs on the GPU and never reads logits back. */
  setLogitProcessorRegistry(registry?: Map<string, LogitProcessor>): void {
    if (registry && registry.size > 0) throw new UnsupportedFeatureError('A LogitProcessor (setLogitProcessorRegistry)', 'sampling runs on the GPU and logits are never read back');
  }

  // ---- loading --------------------------------------------------------------------------------------

  /** Unloads the current model and loads `modelId`; arguments and the model's record are checked first, so a bad call leaves the current model loaded. */
  async reload(modelId: string | string[], chatOpts?: ChatOptions | ChatOptions[]): Promise<void> {
    const ids = Array.isArray(modelId) ? modelId : [modelId];
    const opts = chatOpts === undefined ? [] : Array.isArray(chatOpts) ? chatOpts : [chatOpts];
    if (ids.length !== 1) throw new UnsupportedFeatureError('Loading several models at once', `reload() got ${ids.length} model ids (${ids.join(', ')}); load one`);
    if (opts.length > 1) throw new Error(`reload(): ${opts.length} chatOpts for 1 model id`);
    const id = ids[0];
    const report = progressReporter(this.initProgressCallback, id);
    const base = await this.webConfig();
    const { url, record } = this.findModel(id, base);

    await this.unload();
    const token = ++this.loadToken;
    const options: ChatOptions = { ...record?.overrides, ...opts[0] };
    const contextLength = options.context_window_size !== undefined && options.context_window_size > 0 ? options.context_window_size : undefined;
    const config: WebConfig = {
      ...base.config,
      model: { url, id },
      engine: { ...base.config.engine, ...(contextLength !== undefined ? { contextLength } : {}) },
    };
    const local = await LocalService.create({ config, dbName: this.opts.dbName ?? null, onProgress: (p) => report.load(p), logger: this.logger() });
    let engine: WebGpuEngine;
    try {
      engine = await local.engine();
    } catch (e) {
      await local.close().catch(() => {});
      throw e;
    }
    if (token !== this.loadToken) {
      // unload() or another reload() came in while this one loaded (WebLLM aborts it quietly).
      await local.close();
      return;
    }
    this.tapResults(engine);
    this.loaded = { modelId: id, local, engine, client: createClient(local.service, { apiKey: local.apiKey, logger: this.logger() }), options };
    this.stats = { ...ZERO_STATS };
    this.message = '';
    this.forwarded = [];
    const info = engine.device.adapterInfo;
    report.ready(`WebGPU - ${info.description || info.vendor || engine.stats().adapter}`);
  }

  async unload(): Promise<void> {
    this.loadToken++;
    const loaded = this.loaded;
    this.loaded = undefined;
    this.current?.controller.abort(new Error('unload()'));
    if (loaded) await loaded.local.close();
  }

  // ---- chat completions ------------------------------------------------------------------------------

  chatCompletion(request: ChatCompletionRequestNonStreaming): Promise<ChatCompletion>;
  chatCompletion(request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>>;
  chatCompletion(request: ChatCompletionRequestBase): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion>;
  chatCompletion(request: ChatCompletionRequest): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion>;
  async chatCompletion(request: ChatCompletionRequestBase): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion> {
    const loaded = this.require('ChatCompletionRequest', request.model);
    const body = this.chatBody(request, loaded.options);
    // The service checks the request again when it runs; checking it here too makes a bad stream fail at create(), as WebLLM's own checks do.
    try {
      parseChatRequest(body);
    } catch (e) {
      if (e instanceof ApiError) throw new ServiceError(e.status, e.toBody(), {});
      throw e;
    }
    const includeUsage = request.stream_options?.include_usage === true;
    // As WebLLM: a stream takes its turn when it is first read, a whole answer at once.
    if (request.stream) return this.chatStream(loaded, body, includeUsage);
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of this.chatStream(loaded, body, true)) chunks.push(c);
    return assembleCompletion(chunks, request.logprobs === true);
  }

  /** The request our API takes: WebLLM-only fields checked and dropped, the model's defaults filled in, always streamed with usage. */
  private chatBody(request: ChatCompletionRequestBase, options: ChatOptions): JsonObject {
    const { repetition_penalty, ignore_eos, extra_body, model: _model, stream: _stream, stream_options: _so, ...rest } = request;
    rejectWebLLMOnly({ repetition_penalty: repetition_penalty ?? options.repetition_penalty, ignore_eos, resumable: extra_body?.resumable });
    const format = rest.response_format as { type?: string } | undefined | null;
    if (format?.type === 'grammar') throw new UnsupportedFeatureError("response_format type 'grammar' (EBNF)", "use 'json_object' with a schema, or tools");
    if (format?.type === 'structural_tag') throw new UnsupportedFeatureError("response_format type 'structural_tag'", "use 'json_object' with a schema, or tools");
    return {
      ...withDefaults(rest, options),
      max_tokens: rest.max_tokens ?? CHAT_MAX_TOKENS,
      model: CHAT_MODEL,
      stream: true,
      stream_options: { include_usage: true },
    };
  }

  private async *chatStream(loaded: Loaded, body: JsonObject, includeUsage: boolean): AsyncGenerator<ChatCompletionChunk> {
    const release = await this.turn();
    const run = this.begin();
    this.message = '';
    let head = { id: `chatcmpl-${crypto.randomUUID()}`, created: Math.floor(Date.now() / 1000) };
    let finished = false;
    let usage: CompletionUsage | undefined;
    try {
      let inner: AsyncIterable<JsonObject> | undefined;
      try {
        inner = await loaded.client.chat.completions.create(body as JsonObject & { stream: true }, { signal: run.controller.signal });
      } catch (e) {
        if (!run.interrupted) throw e;
      }
      if (inner) {
        try {
          for await (const c of inner) {
            head = { id: c.id as string, created: c.created as number };
            const choices = c.choices as JsonObject[];
            if (choices.length === 0) {
              usage = this.usage(run, c.usage as JsonObject);
              continue;
            }
            const choice = choices[0];
            const delta = choice.delta as Delta;
            this.message += delta.content ?? '';
            if (choice.finish_reason != null) finished = true;
            yield { ...head, object: 'chat.completion.chunk', model: loaded.modelId, choices: [choice] } as unknown as ChatCompletionChunk;
          }
        } catch (e) {
          if (!run.interrupted) throw e;
        }
      }
      if (!finished) {
        // interruptGenerate(): WebLLM ends the stream with finish_reason 'abort' (and usage when asked).
        yield { ...head, object: 'chat.completion.chunk', model: loaded.modelId, choices: [{ index: 0, delta: {}, finish_reason: 'abort', logprobs: null }] } as unknown as ChatCompletionChunk;
      }
      usage ??= this.usage(run, undefined);
      if (includeUsage) yield { ...head, object: 'chat.completion.chunk', model: loaded.modelId, choices: [], usage } as ChatCompletionChunk;
    } finally {
      this.end(run);
      release();
    }
  }

  // ---- text completions (no chat template) -------------------------------------------------------------

  completion(request: CompletionCreateParamsNonStreaming): Promise<Completion>;
  completion(request: CompletionCreateParamsStreaming): Promise<AsyncIterable<Completion>>;
  completion(request: CompletionCreateParamsBase): Promise<AsyncIterable<Completion> | Completion>;
  completion(request: CompletionCreateParams): Promise<AsyncIterable<Completion> | Completion>;
  async completion(request: CompletionCreateParamsBase): Promise<AsyncIterable<Completion> | Completion> {
    const loaded = this.require('CompletionCreateParams', request.model);
    const r = withDefaults(request as unknown as JsonObject, loaded.options) as unknown as CompletionCreateParamsBase;
    rejectWebLLMOnly({ resumable: (request as { extra_body?: { resumable?: unknown } }).extra_body?.resumable });
    if (typeof r.prompt !== 'string') throw new TypeError('completions.create: prompt must be a string');
    if (r.n != null && r.n !== 1) throw new UnsupportedFeatureError(`n = ${r.n}`, 'one choice per request');
    if (r.logprobs) throw new UnsupportedFeatureError('logprobs on completions.create', 'they are available on chat.completions.create');
    for (const f of ['suffix', 'user', 'best_of'] as const) if (f in request) throw new UnsupportedFeatureError(`CompletionCreateParams.${f}`);
    if (r.logit_bias && Object.keys(r.logit_bias).length > 0) throw new UnsupportedFeatureError('logit_bias');
    if (r.stream_options != null && !r.stream) throw new Error('Only specify stream_options when stream=True.');
    const options: GenerateOptions = {
      prompt: r.prompt,
      maxTokens: r.max_tokens ?? loaded.engine.info.contextLength,
      temperature: r.temperature ?? DEFAULT_TEMPERATURE,
      topP: r.top_p ?? DEFAULT_TOP_P,
      ...(r.seed != null ? { seed: r.seed } : {}),
      ...(r.stop != null ? { stop: typeof r.stop === 'string' ? [r.stop] : r.stop } : {}),
      presencePenalty: r.presence_penalty ?? 0,
      frequencyPenalty: r.frequency_penalty ?? 0,
      repetitionPenalty: r.repetition_penalty ?? loaded.options.repetition_penalty ?? 1,
      stopAtEndOfGeneration: r.ignore_eos !== true,
    };
    const echo = r.echo === true ? r.prompt : '';
    const includeUsage = r.stream_options?.include_usage === true;
    if (r.stream) return this.completionStream(loaded, options, echo, includeUsage);
    let text = echo;
    let finish: string | null = null;
    let head: Completion | undefined;
    let usage: CompletionUsage | undefined;
    for await (const c of this.completionStream(loaded, options, '', true)) {
      head ??= c;
      if (c.usage) usage = c.usage;
      const choice = c.choices[0];
      if (!choice) continue;
      text += choice.text;
      if (choice.finish_reason != null) finish = choice.finish_reason;
    }
    return { id: head!.id, object: 'text_completion', created: head!.created, model: loaded.modelId, choices: [{ index: 0, text, finish_reason: finish, logprobs: null }], usage } as unknown as Completion;
  }

  private async *completionStream(loaded: Loaded, options: GenerateOptions, echo: string, includeUsage: boolean): AsyncGenerator<Completion> {
    const release = await this.turn();
    const run = this.begin();
    this.message = '';
    const head = { id: `cmpl-${crypto.randomUUID()}`, object: 'text_completion' as const, created: Math.floor(Date.now() / 1000), model: loaded.modelId };
    try {
      const generation = loaded.engine.generate({ ...options, signal: run.controller.signal });
      if (echo) yield { ...head, choices: [{ index: 0, text: echo, finish_reason: null, logprobs: null }] } as unknown as Completion;
      for await (const chunk of generation) {
        if (chunk.text === '') continue;
        this.message += chunk.text;
        yield { ...head, choices: [{ index: 0, text: chunk.text, finish_reason: null, logprobs: null }] } as unknown as Completion;
      }
      const result = await generation.result;
      run.result = result;
      const finish = result.stoppedBy === 'aborted' ? 'abort' : result.finishReason;
      yield { ...head, choices: [{ index: 0, text: '', finish_reason: finish, logprobs: null }] } as unknown as Completion;
      const usage = this.usage(run, undefined);
      if (includeUsage) yield { ...head, choices: [], usage } as unknown as Completion;
    } finally {
      this.end(run);
      release();
    }
  }

  // ---- low level -------------------------------------------------------------------------------------

  /**
   * WebLLM appends `inputIds` to the model's KV cache and samples the next token. Here the sequence is
   * kept (until resetChat) and run whole each time; the prefix cache serves the pages already computed.
   */
  async forwardTokensAndSample(inputIds: number[], isPrefill: boolean, modelId?: string): Promise<number> {
    const loaded = this.require('forwardTokensAndSample', modelId);
    const release = await this.turn();
    const run = this.begin();
    try {
      const tokens = [...this.forwarded, ...inputIds];
      const generation = loaded.engine.generate({
        tokens,
        maxTokens: 1,
        temperature: loaded.options.temperature ?? DEFAULT_TEMPERATURE,
        topP: loaded.options.top_p ?? DEFAULT_TOP_P,
        stopAtEndOfGeneration: false,
        signal: run.controller.signal,
      });
      const result = await generation.result;
      if (result.tokens.length === 0) throw new Error('forwardTokensAndSample: interrupted before a token was sampled');
      this.forwarded = tokens;
      const t = result.timings;
      if (isPrefill) {
        this.stats.prefillTokens += t.prefillTokens;
        this.stats.prefillMs += t.prefillMs;
      } else {
        this.stats.decodeTokens += inputIds.length;
        this.stats.decodeMs += t.prefillMs;
      }
      // Counted above as WebLLM counts it (by isPrefill), not by end().
      run.result = undefined;
      return result.tokens[0];
    } finally {
      this.end(run);
      release();
    }
  }

  /** Stops the request that is running now; its answer ends with finish_reason 'abort'. Requests queued behind it are not affected (as in WebLLM). */
  interruptGenerate(): void {
    const run = this.current;
    if (!run || run.interrupted) return;
    run.interrupted = true;
    run.controller.abort(new Error('interruptGenerate()'));
  }

  /** Requests are stateless here (the prefix cache reuses a conversation's pages by itself): this clears the statistics (unless keepStats), the last message and forwardTokensAndSample's sequence. */
  async resetChat(keepStats = false, _modelId?: string): Promise<void> {
    if (!keepStats) this.stats = { ...ZERO_STATS };
    this.message = '';
    this.forwarded = [];
  }

  /** WebLLM's format: prefill and decoding tokens/sec over the requests since the last resetChat(). */
  async runtimeStatsText(modelId?: string): Promise<string> {
    this.require('runtimeStatsText', modelId);
    const s = this.stats;
    return `prefill: ${rate(s.prefillTokens, s.prefillMs).toFixed(4)} tokens/sec, decoding: ${rate(s.decodeTokens, s.decodeMs).toFixed(4)} tokens/sec`;
  }

  /** The text of the running request so far, or of the last one. */
  async getMessage(modelId?: string): Promise<string> {
    this.require('getMessage', modelId);
    return this.message;
  }

  async getMaxStorageBufferBindingSize(): Promise<number> {
    if (this.loaded) return this.loaded.engine.device.device.limits.maxStorageBufferBindingSize;
    return (await adapter()).limits.maxStorageBufferBindingSize;
  }

  async getGPUVendor(): Promise<string> {
    if (this.loaded) return this.loaded.engine.device.adapterInfo.vendor;
    return (await adapter()).info.vendor;
  }

  // ---- not supported -----------------------------------------------------------------------------------

  async embedding(_request: EmbeddingCreateParams): Promise<CreateEmbeddingResponse> {
    throw new UnsupportedFeatureError('Embeddings (embeddings.create)', 'the engine runs decoder language models for text generation only');
  }

  /** No session is ever persisted, so there is none to resume. */
  async listResumableSessions(): Promise<ResumeProbeResult[]> {
    return [];
  }

  async resumeChatCompletion(_sessionId: string, _options?: ResumeChatCompletionOptions): Promise<ResumeResult | AsyncIterable<ChatCompletionChunk>> {
    throw new UnsupportedFeatureError('Resumable generation (resumeChatCompletion)');
  }

  async deleteResumableSession(_sessionId: string): Promise<void> {}

  // ---- internals -------------------------------------------------------------------------------------

  private require(requestName: string, modelId: string | null | undefined): Loaded {
    const loaded = this.loaded;
    if (!loaded) {
      throw new Error(`Model not loaded before trying to complete ${requestName}. Please ensure you have called \`reload(model)\` to load the model before initiating chat operations.`);
    }
    if (modelId && modelId !== loaded.modelId) {
      throw new Error(`Specified model ${modelId} for ${requestName} is not found in loaded models. Please check if the correct model is loaded/specified. Currently loaded models are: ${loaded.modelId}`);
    }
    return loaded;
  }

  /** The next place in line: resolves when every earlier request has finished, with the function that ends this one's turn. */
  private turn(): Promise<() => void> {
    let release!: () => void;
    const done = new Promise<void>((r) => (release = r));
    const ready = this.queue.then(() => release);
    this.queue = this.queue.then(() => done);
    return ready;
  }

  private begin(): Run {
    const run: Run = { controller: new AbortController(), interrupted: false, receivedAt: performance.now() };
    this.current = run;
    return run;
  }

  private end(run: Run): void {
    if (this.current === run) this.current = undefined;
    const r = run.result;
    if (!r) return;
    const t = r.timings;
    this.stats.prefillTokens += t.prefillTokens;
    this.stats.prefillMs += t.prefillMs;
    this.stats.decodeTokens += Math.max(0, r.completionTokens - 1);
    this.stats.decodeMs += t.decodeMs;
  }

  /** Our usage (from the service, or counted from the engine's result after an interruption) with WebLLM's `extra` timings. */
  private usage(run: Run, ours: JsonObject | undefined): CompletionUsage {
    const r = run.result;
    const prompt = (ours?.prompt_tokens as number | undefined) ?? r?.promptTokens ?? 0;
    const completion = (ours?.completion_tokens as number | undefined) ?? r?.completionTokens ?? 0;
    const t = r?.timings;
    const decodeTokens = Math.max(0, (r?.completionTokens ?? 0) - 1);
    return {
      ...(ours ?? {}),
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      extra: {
        e2e_latency_s: (performance.now() - run.receivedAt) / 1000,
        prefill_tokens_per_s: t ? rate(t.prefillTokens, t.prefillMs) : 0,
        decode_tokens_per_s: t ? rate(decodeTokens, t.decodeMs) : 0,
        time_to_first_token_s: t ? t.timeToFirstTokenMs / 1000 : 0,
        time_per_output_token_s: t && decodeTokens > 0 ? t.decodeMs / decodeTokens / 1000 : 0,
      },
    } as CompletionUsage;
  }

  /** Every generation of the loaded engine reports its result (timings, token counts) to the request running it; requests run one at a time. */
  private tapResults(engine: WebGpuEngine): () => void {
    return engine.onGenerationResult((r) => {
      if (this.current) this.current.result = r;
    });
  }

  private async webConfig(): Promise<{ config: WebConfig; url: string }> {
    const given = this.opts.webConfig;
    if (given !== undefined && typeof given === 'object' && !(given instanceof URL)) return { config: given, url: globalThis.location?.href ?? '' };
    const url = new URL(given ?? WEB_CONFIG_FILE, globalThis.location.href).href;
    let res: Response;
    try {
      res = await fetch(url, { cache: 'no-store' });
    } catch (e) {
      throw new Error(`cannot read the service's configuration ${url} (${e instanceof Error ? e.message : String(e)}); write it with \`svc web build\` or pass \`webConfig\``);
    }
    if (!res.ok) throw new Error(`cannot read the service's configuration ${url}: HTTP ${res.status}; write it with \`svc web build\` or pass \`webConfig\``);
    return { config: parseWebConfig(await res.json(), url), url };
  }

  /** The app config's record for `id`, else the site's own model when its id matches. */
  private findModel(id: string, base: { config: WebConfig; url: string }): { url: string; record?: ModelRecord } {
    const record = this.appConfig?.model_list.find((m) => m.model_id === id);
    if (record) {
      if (record.model_type !== undefined && record.model_type !== 0) {
        throw new UnsupportedFeatureError(`model_type ${record.model_type === 1 ? 'embedding' : record.model_type === 2 ? 'VLM' : record.model_type} (model ${id})`, 'only text generation models (LLM) run here');
      }
      if (typeof record.model !== 'string' || record.model === '') throw new Error(`appConfig record ${id}: 'model' must be the URL of a GGUF file`);
      // Relative URLs resolve as WebLLM resolves them: against the page, or in a worker the origin.
      const url = new URL(record.model, typeof document !== 'undefined' ? document.URL : globalThis.location.origin).href;
      if (!/\.gguf$/i.test(new URL(url).pathname)) {
        throw new UnsupportedFeatureError(`The model of record ${id} (${record.model})`, 'svc runs GGUF files, not MLC-compiled weights and model libraries; point `model` at a .gguf URL');
      }
      return { url, record };
    }
    if (base.config.model.id === id) return { url: new URL(base.config.model.url, base.url).href };
    const known = [...(this.appConfig?.model_list.map((m) => m.model_id) ?? []), ...(base.config.model.id ? [base.config.model.id] : [])];
    throw new Error(`Cannot find model record in appConfig for ${id}. Known models: ${known.join(', ') || 'none'} (appConfig.model_list records with a GGUF URL in 'model', and the site's svc-web.json model).`);
  }

  private logger(): Logger {
    const at = (level: LogLevel) => LOG_ORDER[level] >= LOG_ORDER[this.logLevel];
    const write = (level: LogLevel, fn: (...a: unknown[]) => void) => (obj: object, msg?: string) => {
      if (at(level)) fn(msg ?? '', obj);
    };
    return { debug: write('DEBUG', console.debug), info: write('INFO', console.info), warn: write('WARN', console.warn), error: write('ERROR', console.error) };
  }
}

/**
 * Puts `engine` into one of WebLLM's handlers (WebWorkerMLCEngineHandler, ServiceWorkerMLCEngineHandler,
 * the extension's): each constructs its own MLCEngine and wires its init progress to its clients; the
 * engine takes over that wiring and the handler's `engine` field.
 */
export function installInHandler<H extends { engine: unknown }>(handler: H, engine: SvcMLCEngine): H {
  const previous = handler.engine as { getInitProgressCallback?: () => InitProgressCallback | undefined };
  engine.setInitProgressCallback(previous.getInitProgressCallback?.());
  handler.engine = engine;
  return handler;
}

function rejectWebLLMOnly(f: { repetition_penalty?: number | null; ignore_eos?: boolean; resumable?: unknown }): void {
  if (f.repetition_penalty != null && f.repetition_penalty !== 1) {
    throw new UnsupportedFeatureError(`repetition_penalty ${f.repetition_penalty} on chat completions`, 'use presence_penalty or frequency_penalty (completions.create takes repetition_penalty)');
  }
  if (f.ignore_eos === true) throw new UnsupportedFeatureError('ignore_eos on chat completions', 'completions.create takes it');
  if (f.resumable != null && (f.resumable as { enabled?: boolean }).enabled !== false) throw new UnsupportedFeatureError('Resumable generation (extra_body.resumable)');
}

/** Sampling the request leaves unset comes from the model's overrides and chatOpts (WebLLM takes it from mlc-chat-config.json, which they override). */
function withDefaults<T extends object>(request: T, options: ChatOptions): T {
  const r = { ...request } as Record<string, unknown>;
  const fill = (key: string, value: number | undefined) => {
    if (r[key] == null && value !== undefined) r[key] = value;
  };
  fill('temperature', options.temperature);
  fill('top_p', options.top_p);
  fill('presence_penalty', options.presence_penalty);
  fill('frequency_penalty', options.frequency_penalty);
  return r as T;
}

/** A whole ChatCompletion from the chunks of a stream: the message as our service assembles it, the finish reason, usage. */
function assembleCompletion(chunks: ChatCompletionChunk[], logprobs: boolean): ChatCompletion {
  const deltas: Delta[] = [];
  const content: unknown[] = [];
  let finish: string | null = null;
  let extra: Record<string, unknown> = {};
  let usage: CompletionUsage | undefined;
  for (const c of chunks) {
    if (c.usage) usage = c.usage;
    const choice = c.choices[0] as (ChatCompletionChunk.Choice & Record<string, unknown>) | undefined;
    if (!choice) continue;
    deltas.push(choice.delta as Delta);
    content.push(...((choice.logprobs as { content?: unknown[] } | null)?.content ?? []));
    if (choice.finish_reason != null) {
      finish = choice.finish_reason;
      const { index: _i, delta: _d, logprobs: _l, finish_reason: _f, ...more } = choice;
      extra = more;
    }
  }
  const first = chunks[0];
  return {
    id: first.id,
    object: 'chat.completion',
    created: first.created,
    model: first.model,
    choices: [{ index: 0, message: assembleMessage(deltas), logprobs: logprobs ? { content } : null, finish_reason: finish, ...extra }],
    usage,
  } as unknown as ChatCompletion;
}

function rate(tokens: number, ms: number): number {
  return ms > 0 ? (tokens / ms) * 1000 : 0;
}

async function adapter(): Promise<GPUAdapter> {
  const a = await navigator.gpu?.requestAdapter();
  if (!a) throw new Error('WebGPU is not available in this environment');
  return a;
}
