/** Checks generation options once, at the engine's edge; every message names the option. */
import { EngineInputError, type GenerateOptions } from '../types.ts';

export interface ResolvedOptions {
  maxTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  seed: number | undefined;
  stop: string[];
  presencePenalty: number;
  frequencyPenalty: number;
  repetitionPenalty: number;
  stopAtEndOfGeneration: boolean;
}

/** Tokens before the end that the repetition penalty looks back over (llama.cpp's default). */
export const REPETITION_WINDOW = 64;

function num(name: string, v: unknown, def: number, ok: (x: number) => boolean, rule: string): number {
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) throw new EngineInputError(`${name} must be ${rule} (got ${String(v)})`, name);
  return v;
}

export function resolveOptions(o: GenerateOptions): ResolvedOptions {
  const stop = o.stop ?? [];
  if (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string' || s.length === 0)) {
    throw new EngineInputError('stop must be an array of non-empty strings', 'stop');
  }
  if (stop.length > 16) throw new EngineInputError(`stop takes at most 16 strings (got ${stop.length})`, 'stop');
  return {
    maxTokens: num('maxTokens', o.maxTokens, 256, (x) => Number.isInteger(x) && x >= 1, 'an integer ≥ 1'),
    temperature: num('temperature', o.temperature, 0, (x) => x >= 0 && x <= 100, 'between 0 and 100'),
    topP: num('topP', o.topP, 1, (x) => x > 0 && x <= 1, 'in (0, 1]'),
    topK: num('topK', o.topK, 0, (x) => Number.isInteger(x) && x >= 0, 'an integer ≥ 0'),
    seed: o.seed === undefined ? undefined : num('seed', o.seed, 0, (x) => Number.isInteger(x), 'an integer'),
    stop: [...stop],
    presencePenalty: num('presencePenalty', o.presencePenalty, 0, (x) => x >= -2 && x <= 2, 'between -2 and 2'),
    frequencyPenalty: num('frequencyPenalty', o.frequencyPenalty, 0, (x) => x >= -2 && x <= 2, 'between -2 and 2'),
    repetitionPenalty: num('repetitionPenalty', o.repetitionPenalty, 1, (x) => x > 0 && x <= 10, 'in (0, 10]'),
    stopAtEndOfGeneration: o.stopAtEndOfGeneration ?? true,
  };
}

/** Sampling needs the top-K path (CPU picks among candidates) rather than the GPU's argmax/Gumbel-max. */
export function needsCandidates(o: ResolvedOptions): boolean {
  return o.temperature > 0 && (o.topK > 0 || o.topP < 1);
}
