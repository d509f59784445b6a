/** Request fields shared by chat completions and infer, with the spec's bounds. */
import { z } from 'zod';
import { MAX_STOP_CHARS } from '../request-limits.ts';

/** Spec: max_tokens default 512 (the specialist's default), at most 4096. */
export const MAX_TOKENS_LIMIT = 4096;

// Provider clients send null for "not set"; nullish() treats it like an absent field.
export const maxTokens = z.number().int().min(1).max(MAX_TOKENS_LIMIT).nullish();
export const temperature = z.number().min(0).max(2).nullish();
export const topP = z.number().gt(0).max(1).nullish();
export const seed = z.number().int().nullish();
export const penalty = z.number().min(-2).max(2).nullish();
const stopString = z.string().min(1).max(MAX_STOP_CHARS);
export const stop = z
  .union([stopString, z.array(stopString).max(4)])
  .nullish()
  .transform((s) => (s == null ? [] : typeof s === 'string' ? [s] : s));

/** The sampling a request asked for; absent fields fall back to the specialist's defaults. */
export interface SamplingRequest {
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  stop: string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
}

export function orUndefined<T>(v: T | null | undefined): T | undefined {
  return v ?? undefined;
}

/** The wire fields both endpoints share, as a SamplingRequest (max_tokens chosen by the caller). */
export function samplingFrom(r: {
  temperature?: number | null;
  top_p?: number | null;
  seed?: number | null;
  stop: string[];
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
}, maxTokens: number | null | undefined): SamplingRequest {
  return {
    maxTokens: orUndefined(maxTokens),
    temperature: orUndefined(r.temperature),
    topP: orUndefined(r.top_p),
    seed: orUndefined(r.seed),
    stop: r.stop,
    presencePenalty: orUndefined(r.presence_penalty),
    frequencyPenalty: orUndefined(r.frequency_penalty),
  };
}
