/**
 * From a validated request to the engine and back: prompt rendering, the context-window check,
 * sampling defaults, and a metered run that counts the request exactly once when the model has done
 * its work (finished, or cut short because the caller went away).
 */
import { EngineInputError, type GenerateOptions, type Generation, type GenerationChunk, type GenerationResult, type TextEngine } from '../engine/types.ts';
import type { Reservation } from './access.ts';
import { ApiError, invalidRequest } from './errors.ts';
import { renderPrompt, type ChatMessage } from './prompt.ts';
import type { SamplingRequest } from './requests/sampling.ts';
import type { Specialist } from './specialists/schema.ts';

export interface PreparedRun {
  engine: TextEngine;
  promptTokens: number[];
  options: Omit<GenerateOptions, 'prompt' | 'tokens' | 'signal'>;
}

/** Engine option names → the API parameter a caller should fix. */
export type ParamNames = Readonly<Record<string, string>>;

export const CHAT_PARAMS: ParamNames = {
  prompt: 'messages',
  tokens: 'messages',
  maxTokens: 'max_tokens',
  temperature: 'temperature',
  topP: 'top_p',
  seed: 'seed',
  stop: 'stop',
  presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty',
};

export const INFER_PARAMS: ParamNames = { ...CHAT_PARAMS, prompt: 'prompt', tokens: 'prompt' };

/**
 * The specialist's system prompt goes first, then the caller's messages. max_tokens is clamped to what
 * the context window leaves after the prompt (finish_reason `length` tells the caller); a prompt that
 * leaves no room at all is a 400.
 */
export function prepareRun(engine: TextEngine, specialist: Specialist, messages: readonly ChatMessage[], sampling: SamplingRequest, params: ParamNames): PreparedRun {
  const all: ChatMessage[] = specialist.systemPrompt ? [{ role: 'system', content: specialist.systemPrompt }, ...messages] : [...messages];
  const rendered = renderPrompt(all, engine.info);
  const promptTokens = engine.tokenizer.encode(rendered.text);
  const context = engine.info.contextLength;
  if (promptTokens.length >= context) {
    throw invalidRequest(
      `This model's maximum context length is ${context} tokens, but the ${params.prompt === 'messages' ? 'messages take' : 'prompt takes'} ${promptTokens.length} tokens, leaving no room for a completion. Shorten the input.`,
      params.prompt ?? 'messages',
      'context_length_exceeded',
    );
  }
  const requested = sampling.maxTokens ?? specialist.sampling.maxTokens;
  const stop = [...new Set([...sampling.stop, ...rendered.stop])];
  return {
    engine,
    promptTokens,
    options: {
      maxTokens: Math.min(requested, context - promptTokens.length),
      temperature: sampling.temperature ?? specialist.sampling.temperature,
      topP: sampling.topP ?? specialist.sampling.topP,
      seed: sampling.seed,
      stop,
      presencePenalty: sampling.presencePenalty,
      frequencyPenalty: sampling.frequencyPenalty,
    },
  };
}

/**
 * One generation, counted on `reservation` exactly once: with the engine's numbers when it finishes, or
 * with the tokens so far when the caller aborts or stops reading (the model did that work); a failure of
 * ours counts nothing. The engine starts in the constructor, so its synchronous input errors surface
 * before anything is sent. The owner calls close() when done and releases the reservation itself.
 */
export class MeteredRun {
  private readonly own = new AbortController();
  private readonly generation: Generation;
  private readonly onAbort = () => this.own.abort(this.signal.reason);
  private completionTokens = 0;
  private finished = false;
  private failed = false;

  constructor(
    private readonly prep: PreparedRun,
    private readonly reservation: Reservation,
    private readonly signal: AbortSignal,
    private readonly params: ParamNames,
  ) {
    // Our own controller also stops the engine when the consumer walks away without aborting.
    if (signal.aborted) this.own.abort(signal.reason);
    else signal.addEventListener('abort', this.onAbort, { once: true });
    try {
      this.generation = prep.engine.generate({ ...prep.options, tokens: prep.promptTokens, signal: this.own.signal });
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
        yield chunk;
      }
      const result = await this.generation.result;
      this.reservation.record(result.promptTokens, result.completionTokens);
      this.finished = true;
      return result;
    } catch (e) {
      this.failed = true;
      throw this.mapError(e);
    }
  }

  /** Stops an unfinished generation and counts the work done for a caller who left. Idempotent. */
  close(): void {
    this.signal.removeEventListener('abort', this.onAbort);
    if (this.finished) return;
    this.own.abort();
    if (!this.failed || this.signal.aborted) this.reservation.record(this.prep.promptTokens.length, this.completionTokens);
  }

  private mapError(e: unknown): unknown {
    if (e instanceof EngineInputError && !this.signal.aborted) {
      const param = e.param === undefined ? null : (this.params[e.param] ?? e.param);
      return new ApiError(400, 'invalid_request_error', e.message, { param });
    }
    return e;
  }
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
