/**
 * The batching curve (`bench --curve 1,4,8,16`): for each n, n sequences start at once and prefill and
 * decode are timed as separate phases, for our engine and for llama.cpp alike.
 *
 * - **prefill** ends when the last of the n sequences has its first token: aggregate prefill tok/s is
 *   n × prompt tokens over that time. (Sequences that got their first token earlier may already decode
 *   while others prefill; both engines do that, and those tokens count in neither phase.)
 * - **decode** starts there: each sequence's window opens at its first token stamped at or after that
 *   moment and runs for `decodeTokens` more tokens, so every counted token comes from a step in which all
 *   n sequences decode. Per-sequence decode tok/s is the median of the sequences' own rates; aggregate
 *   decode tok/s is their sum (all windows overlap, so it is the batch's tokens per second).
 *
 * Each sequence gets its own prompt (the bench prompt rotated, see curvePrompt), so a prefix cache could
 * not turn n prefills into one.
 */
import { InvalidArgumentError } from 'commander';
import { median } from './measure.ts';

export const DEFAULT_CURVE = [1, 4, 8, 16] as const;
/** Most sequences one curve point may ask for (our engine's KV cache and llama.cpp's context grow with it). */
export const MAX_CURVE_SEQUENCES = 64;

/** One point of the curve: n sequences at once. */
export interface CurvePoint {
  sequences: number;
  /** Prompt tokens per sequence. */
  promptTokens: number;
  /** n × promptTokens / time until every sequence had its first token. */
  prefillTokensPerSecond: number;
  /** Time until every sequence had its first token (the last one's time to first token). */
  allFirstTokenMs: number;
  /** Sum of the sequences' decode rates inside the window where all n decode. */
  decodeTokensPerSecond: number;
  /** Median of the sequences' own decode rates in that window. */
  perSequenceDecodeTokensPerSecond: number;
  /** Tokens each sequence decoded inside the window (the fewest, if they differ). */
  decodeTokensPerSequence: number;
}

/** One engine's curve, as it goes into the results JSON and the second table. */
export interface EngineCurve {
  engine: string;
  backend: string;
  points: CurvePoint[];
}

/** Commander parser for `--curve [list]`: comma-separated sequence counts, given without value = DEFAULT_CURVE. */
export function parseCurve(value: string | boolean | undefined): number[] | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true || value.trim() === '') return [...DEFAULT_CURVE];
  const parts = value.split(',').map((s) => s.trim());
  const out: number[] = [];
  for (const p of parts) {
    const n = Number(p);
    if (!/^\d+$/.test(p) || n < 1 || n > MAX_CURVE_SEQUENCES) {
      throw new InvalidArgumentError(`--curve takes comma-separated sequence counts from 1 to ${MAX_CURVE_SEQUENCES} (got "${p}")`);
    }
    if (!out.includes(n)) out.push(n);
  }
  return out.sort((a, b) => a - b);
}

/**
 * Sequence i's prompt: the bench prompt with everything after the first token (BOS where the model adds
 * one) rotated left by i, so the n prompts share at most that first token and keep the same length.
 */
export function curvePrompt(prompt: readonly number[], i: number, keepFirst = true): number[] {
  const head = keepFirst ? prompt.slice(0, 1) : [];
  const rest = prompt.slice(head.length);
  if (rest.length === 0) return [...prompt];
  const k = i % rest.length;
  return [...head, ...rest.slice(k), ...rest.slice(0, k)];
}

/**
 * Generated tokens to allow each sequence: the decode window plus what a sequence that finished its prompt
 * first may decode while the others still prefill (one token per step, at most n × prompt / 16 steps when a
 * step takes at least 16 prompt tokens), plus a little.
 */
export function curveMaxTokens(n: number, promptTokens: number, decodeTokens: number): number {
  return decodeTokens + (n > 1 ? Math.ceil((n * promptTokens) / 16) : 0) + 4;
}

/**
 * The figures of one point from each sequence's token timestamps (ms, same clock as `t0`, in order;
 * stamps[i][0] is sequence i's first token).
 */
export function curvePoint(promptTokens: number, t0: number, stamps: readonly (readonly number[])[]): CurvePoint {
  const n = stamps.length;
  if (n === 0) throw new Error('curvePoint: no sequences');
  for (const [i, s] of stamps.entries()) if (s.length === 0) throw new Error(`curvePoint: sequence ${i} produced no token`);
  const allFirst = Math.max(...stamps.map((s) => s[0]));
  const rates: number[] = [];
  let fewest = Infinity;
  for (const s of stamps) {
    const anchor = s.findIndex((t) => t >= allFirst);
    const k = anchor < 0 ? 0 : s.length - 1 - anchor;
    fewest = Math.min(fewest, k);
    const dt = anchor < 0 ? 0 : s[s.length - 1] - s[anchor];
    rates.push(k > 0 && dt > 0 ? (k / dt) * 1000 : 0);
  }
  const prefillMs = allFirst - t0;
  return {
    sequences: n,
    promptTokens,
    prefillTokensPerSecond: prefillMs > 0 ? (n * promptTokens * 1000) / prefillMs : 0,
    allFirstTokenMs: prefillMs,
    decodeTokensPerSecond: rates.reduce((a, b) => a + b, 0),
    perSequenceDecodeTokensPerSecond: median(rates),
    decodeTokensPerSequence: fewest,
  };
}

/** The median of each figure over repeated runs of the same point. */
export function medianPoint(runs: readonly CurvePoint[]): CurvePoint {
  if (runs.length === 0) throw new Error('medianPoint: no runs');
  const m = (f: (p: CurvePoint) => number) => median(runs.map(f));
  return {
    sequences: runs[0].sequences,
    promptTokens: runs[0].promptTokens,
    prefillTokensPerSecond: m((p) => p.prefillTokensPerSecond),
    allFirstTokenMs: m((p) => p.allFirstTokenMs),
    decodeTokensPerSecond: m((p) => p.decodeTokensPerSecond),
    perSequenceDecodeTokensPerSecond: m((p) => p.perSequenceDecodeTokensPerSecond),
    decodeTokensPerSequence: Math.min(...runs.map((p) => p.decodeTokensPerSequence)),
  };
}

/** One running sequence as the timing loop sees it: token counts as they arrive, and a way to end it early. */
export interface CurveStream {
  /** Yields how many tokens each arriving piece carries. */
  tokens: AsyncIterable<number>;
  /** Ends the sequence (called once, when its window is full or it ended by itself). */
  stop(): void | Promise<void>;
}

/**
 * Starts n sequences at once (`open(i)`), stamps every token, and stops each sequence once it has
 * `decodeTokens` tokens after the moment all n had their first one. Returns t0 and the stamps for curvePoint.
 */
export async function timeSequences(n: number, decodeTokens: number, open: (i: number) => CurveStream, now: () => number = () => performance.now()): Promise<{ t0: number; stamps: number[][] }> {
  const stamps: number[][] = Array.from({ length: n }, () => []);
  let started = 0;
  let allFirst = Infinity;
  const t0 = now();
  const streams = Array.from({ length: n }, (_, i) => open(i));
  await Promise.all(
    streams.map(async (s, i) => {
      const mine = stamps[i];
      let anchor = -1;
      try {
        for await (const count of s.tokens) {
          if (count <= 0) continue;
          const t = now();
          for (let j = 0; j < count; j++) mine.push(t);
          if (mine.length === count && ++started === n) allFirst = t;
          if (anchor < 0 && t >= allFirst) anchor = mine.length - count;
          if (anchor >= 0 && mine.length - 1 - anchor >= decodeTokens) break;
        }
      } finally {
        await s.stop();
      }
    }),
  );
  return { t0, stamps };
}
