/**
 * From a validated request to the engine and back: the prompt through the model's chat template (or the
 * documented fallback), the context-window check, sampling defaults, the output grammar compiled before
 * anything is sent, and a metered run that counts the request exactly once when the model has done its
 * work (finished, or cut short because the caller went away).
 */
import { PromptTooLongError, renderChat, type ChatMessage, type RenderedChat } from '../engine/chat/index.ts';
import { GrammarBusyError, GrammarInputError, inProcessGrammars, type ConstraintHandle, type GrammarHandle } from '../engine/grammar/index.ts';
import { EngineInputError, type GenerateOptions, type Generation, type GenerationChunk, type GenerationResult, type TextEngine } from '../engine/types.ts';
import type { Reservation } from './access.ts';
import type { RequestRecord } from './context.ts';
import { turnsToDrop, type ConversationTurn } from './conversations.ts';
import { ApiError, grammarCompilerBusy, interrupted, invalidRequest, isInterruption, toApiError } from './errors.ts';
import type { OutputPlan } from './output/plan.ts';
import { historyWithinBound, promptCharLimit, refuseOversizedPrompt, renderedPromptTooLong } from './request-limits.ts';
import type { SamplingRequest } from './requests/sampling.ts';
import type { Specialist } from './specialists/schema.ts';

export interface PreparedRun {
  engine: TextEngine;
  promptTokens: number[];
  /** `adapter`: a fine-tuned model's LoRA adapter id on the engine (GenerateOptions.adapter). */
  options: Omit<GenerateOptions, 'prompt' | 'tokens' | 'signal' | 'constraint'> & { adapter?: string };
  output: OutputPlan;
  grammar?: GrammarHandle;
  /** History turns that made it into the prompt (the oldest others were left out to fit). */
  historyUsed: number;
}

/** Engine option names → the API parameter a caller should fix. */
export type ParamNames = Readonly<Record<string, string>>;

export const CHAT_PARAMS: ParamNames = {
  prompt: 'messages',
  tokens: 'messages',
  messages: 'messages',
  maxTokens: 'max_tokens',
  temperature: 'temperature',
  topP: 'top_p',
  seed: 'seed',
  stop: 'stop',
  presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty',
};

export const INFER_PARAMS: ParamNames = { ...CHAT_PARAMS, prompt: 'prompt', tokens: 'prompt', messages: 'prompt' };

export interface RunInput {
  specialist: Specialist;
  /** The caller's messages. */
  messages: readonly ChatMessage[];
  /** Earlier turns of a conversation, put before `messages`; the oldest are left out to fit. */
  history?: readonly ConversationTurn[];
  output: OutputPlan;
  sampling: SamplingRequest;
  params: ParamNames;
  /** A fine-tuned model's adapter id on the engine. */
  adapter?: string;
}

/**
 * The specialist's system prompt (with the output plan's instructions) goes first, then history, then
 * the caller's messages. max_tokens is lowered to the specialist's limit and to what the context window
 * leaves after the prompt (finish_reason `length` tells the caller); a prompt that leaves no room at
 * all is a 400. The grammar is compiled here, so its errors are 400s before a stream starts.
 */
export async function prepareRun(engine: TextEngine, input: RunInput): Promise<PreparedRun> {
  const { specialist, output, sampling, params } = input;
  const system = [specialist.systemPrompt, ...output.instructions].filter((s) => s.length > 0).join('\n\n');
  const head: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  // Request size limits (protocol/request-limits.ts): refused, and history trimmed, by counting characters before any rendering or tokenizing.
  const size = { contextLength: engine.info.contextLength, tokenizer: engine.tokenizer, hasTemplate: !!engine.info.chatTemplate, messages: [...head, ...input.messages], param: params.prompt ?? 'messages' };
  refuseOversizedPrompt(size);
  const history = historyWithinBound(size, input.history ?? []);
  const maxChars = promptCharLimit(size.contextLength, size.tokenizer);
  const render = (dropped: number): RenderedChat =>
    mapInputError(() => {
      try {
        return renderChat({ tokenizer: engine.tokenizer, chatTemplate: engine.info.chatTemplate }, [...head, ...history.slice(dropped), ...input.messages], { tools: output.toolCalls?.render, maxChars });
      } catch (e) {
        throw e instanceof PromptTooLongError ? renderedPromptTooLong(size, e.chars) : e;
      }
    }, params);
  // While history is being trimmed, a render too long to tokenize is simply one that does not fit.
  const promptLength = (dropped: number): number => {
    try {
      return render(dropped).tokens.length;
    } catch (e) {
      if (e instanceof ApiError && e.code === 'context_length_exceeded') return Infinity;
      throw e;
    }
  };

  const context = engine.info.contextLength;
  const requested = Math.min(sampling.maxTokens ?? specialist.sampling.maxTokens, specialist.maxTokensLimit ?? Infinity);
  // History gives way to the answer: it keeps what fits beside the requested tokens (at most half the window).
  const dropped = history.length === 0 ? 0 : turnsToDrop(history, promptLength, Math.min(requested, Math.floor(context / 2)), context);
  const rendered = render(dropped);
  const promptTokens = rendered.tokens;
  if (promptTokens.length >= context) {
    throw invalidRequest(
      `This model's maximum context length is ${context} tokens, but the ${params.prompt === 'messages' ? 'messages take' : 'prompt takes'} ${promptTokens.length} tokens, leaving no room for a completion. Shorten the input.`,
      params.prompt ?? 'messages',
      'context_length_exceeded',
    );
  }
  const room = Math.min(requested, context - promptTokens.length);
  // Tokens for text the protocol may have to append (closing a fenced block) come out of the budget.
  const reserve = output.closing ? engine.tokenizer.encode(output.closing.longest, { addBos: false }).length : 0;
  const maxTokens = Math.max(1, room - reserve);
  const grammar = await compileOutput(engine, output);
  return {
    engine,
    promptTokens,
    grammar,
    output,
    historyUsed: history.length - dropped,
    options: {
      maxTokens,
      temperature: sampling.temperature ?? specialist.sampling.temperature,
      topP: sampling.topP ?? specialist.sampling.topP,
      seed: sampling.seed,
      // With a grammar that decides where the answer ends, any stop string could only cut the form short
      // (a JSON object ended at a caller's "}" would be invalid yet reported `stop`), so none applies;
      // except where the protocol can close what a stop string cut (the code specialist's fence).
      stop: grammar && !output.formatStop && !output.closing ? [] : [...new Set([...sampling.stop, ...(output.formatStop ? rendered.stop : [])])],
      presencePenalty: sampling.presencePenalty,
      frequencyPenalty: sampling.frequencyPenalty,
      ...(input.adapter !== undefined ? { adapter: input.adapter } : {}),
    },
  };
}

function mapInputError<T>(fn: () => T, params: ParamNames): T {
  try {
    return fn();
  } catch (e) {
    throw e instanceof EngineInputError ? toApiError(e, params) : e;
  }
}

/**
 * The output plan's grammar for this model. A grammar the caller's input made impossible is a 400
 * under the API parameter that set it (the compiler names its own spec's parts, e.g. `schema at /x`).
 */
async function compileOutput(engine: TextEngine, output: OutputPlan): Promise<GrammarHandle | undefined> {
  const spec = output.grammar?.(engine.tokenizer);
  if (!spec) return undefined;
  try {
    return await (engine.grammars ?? inProcessGrammars(engine.tokenizer)).compile(spec);
  } catch (e) {
    if (e instanceof GrammarBusyError) throw grammarCompilerBusy(e.message, e.retryAfterSeconds);
    if (!(e instanceof EngineInputError)) throw e;
    throw grammarApiError(e, output);
  }
}

/** A grammar error as a 400 under the API parameter that set the grammar (`schema at /x` → `response_format.json_schema.schema at /x`). */
function grammarApiError(e: EngineInputError, output: OutputPlan): ApiError {
  const own = e.param ?? '';
  const param = output.blame(own);
  const message = param && e.message.startsWith(own) ? param + e.message.slice(own.length) : e.message;
  return new ApiError(400, 'invalid_request_error', message, { param });
}

/**
 * One generation, counted on `reservation` exactly once: with the engine's numbers when it finishes, or
 * with the tokens so far when the caller aborts or stops reading (the model did that work); a failure of
 * ours counts nothing, nor does a generation the server interrupted, nor output the grammar could not
 * finish (a dead end, reported as a 400).
 * start() begins the engine's work, so its input errors surface before anything is sent. The owner
 * calls close() when done and releases the reservation itself.
 */
export class MeteredRun {
  private readonly own = new AbortController();
  private readonly generation: Generation;
  private readonly onAbort = () => this.own.abort(this.signal.reason);
  private completionTokens = 0;
  private finished = false;
  private failed = false;

  /** `record`: where the first and last token times go (time to first token, tokens per second). */
  static async start(prep: PreparedRun, reservation: Reservation, signal: AbortSignal, params: ParamNames, record?: RequestRecord): Promise<MeteredRun> {
    // The constraint gets the generation's own budget, so it closes the output within it.
    const constraint = prep.grammar ? await prep.grammar.createConstraint({ maxTokens: prep.options.maxTokens }) : undefined;
    let run: MeteredRun;
    try {
      run = new MeteredRun(prep, constraint, reservation, signal, params, record);
    } catch (e) {
      constraint?.dispose();
      throw e;
    }
    // Freed once the engine is done with it (an aborted sequence may still be mid-step when close() runs).
    if (constraint) void run.generation.result.then(() => constraint.dispose(), () => constraint.dispose());
    return run;
  }

  private constructor(
    private readonly prep: PreparedRun,
    private readonly constraint: ConstraintHandle | undefined,
    private readonly reservation: Reservation,
    private readonly signal: AbortSignal,
    private readonly params: ParamNames,
    private readonly record: RequestRecord | undefined,
  ) {
    // Our own controller also stops the engine when the consumer walks away without aborting.
    if (signal.aborted) this.own.abort(signal.reason);
    else signal.addEventListener('abort', this.onAbort, { once: true });
    try {
      this.generation = prep.engine.generate({ ...prep.options, tokens: prep.promptTokens, constraint, signal: this.own.signal });
    } catch (e) {
      this.failed = true;
      signal.removeEventListener('abort', this.onAbort);
      throw this.mapError(e);
    }
    // Rejections are awaited in chunks(); this only keeps an early one from counting as unhandled.
    this.generation.result.catch(() => {});
  }

  /** The engine's chunks; returns its result once generation has ended and been counted. */
  async *chunks(): AsyncGenerator<GenerationChunk, GenerationResult, void> {
    try {
      for await (const chunk of this.generation) {
        this.completionTokens += chunk.tokens.length;
        if (this.record && chunk.tokens.length > 0) {
          this.record.firstTokenAt ??= performance.now();
          this.record.lastTokenAt = performance.now();
        }
        yield chunk;
      }
      const result = await this.generation.result;
      // Cut short: partial text must never pass for a complete answer (nor `stop` for a finished form).
      if (result.stoppedBy === 'aborted') throw this.abortError();
      const deadEnd = this.constraint?.deadEnd;
      if (deadEnd !== undefined) throw this.deadEndError(deadEnd);
      await this.reservation.record(result.promptTokens, result.completionTokens);
      this.finished = true;
      return result;
    } catch (e) {
      this.failed = true;
      throw this.mapError(e);
    }
  }

  /**
   * Stops an unfinished generation and counts the work done for a caller who left; a generation the
   * server interrupted is not counted (the caller got an error, not an answer). Idempotent.
   */
  async close(): Promise<void> {
    this.signal.removeEventListener('abort', this.onAbort);
    if (this.finished) return;
    this.own.abort();
    if (this.signal.aborted && isInterruption(this.signal.reason)) return;
    if (this.failed && !this.signal.aborted) return;
    // Nobody is left to tell if this fails (the caller has gone): the store's own error is logged by it.
    await this.reservation.record(this.prep.promptTokens.length, this.completionTokens).catch(() => {});
  }

  /** Why an aborted generation ended: the server's interruption, the caller's departure, or (unknown) an interruption. */
  private abortError(): unknown {
    if (this.signal.aborted) return this.signal.reason ?? interrupted('the request was aborted');
    return interrupted('the generation was stopped before it finished');
  }

  /**
   * The grammar needed text no token of this model's vocabulary can write (beyond what compiling could
   * foresee). Not a fault to retry: the same request fails the same way on this model.
   */
  private deadEndError(detail: string): ApiError {
    const param = this.prep.output.source;
    return new ApiError(400, 'invalid_request_error', `This model's vocabulary cannot produce the required output form: ${detail}. Nothing was counted; change the schema, labels or tools, or use a model whose vocabulary has these characters.`, {
      param,
      code: 'output_form_unreachable',
    });
  }

  private mapError(e: unknown): unknown {
    if (!(e instanceof EngineInputError) || this.signal.aborted) return e;
    // A grammar found too slow to follow while generating is the grammar's fault, named like a compile error.
    return e instanceof GrammarInputError ? grammarApiError(e, this.prep.output) : toApiError(e, this.params);
  }
}

/** exp of the summed log-probabilities: the probability the model gave this exact answer (under the grammar). */
export function answerProbability(logprobs: readonly number[]): number {
  let sum = 0;
  for (const l of logprobs) sum += l;
  return Math.exp(sum);
}

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: [];
}

/** The provider's `logprobs.content` entries for a chunk's tokens. */
export function tokenLogprobs(engine: TextEngine, chunk: GenerationChunk): TokenLogprob[] {
  const decoder = new TextDecoder();
  return chunk.tokens.map((id, i) => {
    const bytes = engine.tokenizer.tokenBytes(id);
    return { token: decoder.decode(bytes), logprob: chunk.logprobs[i] ?? 0, bytes: [...bytes], top_logprobs: [] };
  });
}
