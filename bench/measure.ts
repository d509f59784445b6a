import type { Efficiency } from './efficiency.ts';

/** What one engine measured on one model: the figures the bench table compares. */
export interface Measurement {
  engine: string;
  /** Backend or adapter detail (e.g. "swiftshader", "llama.cpp cpu, 1 thread"). */
  backend: string;
  promptTokens: number;
  generatedTokens: number;
  /** Load time, file to ready. */
  loadMs: number;
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
  timeToFirstTokenMs: number;
  /** Bytes of GPU memory the engine allocated (weights, KV cache, activations), if known. */
  gpuMemoryBytes?: number;
  dispatchesPerToken?: number;
  /** Extra figures (constrained-decoding cost etc.). */
  extra?: Record<string, number | string>;
  /** Work done per second, and its share of the adapter's limits when `--limits` measured them. */
  efficiency?: Efficiency;
}

/** One timed generation of the bench prompt. */
export interface RunTiming {
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
  timeToFirstTokenMs: number;
}

/**
 * An engine loaded and warmed up for the bench's main measurement: `once()` times one generation of the
 * prompt, `finish(runs)` takes the engine's other figures, releases it and returns its Measurement with
 * the medians of `runs`. Split so two engines' runs can alternate (bench/paired.ts).
 */
export interface EngineRuns {
  once(): Promise<RunTiming>;
  finish(runs: readonly RunTiming[]): Promise<Measurement>;
}

/** Medians of the timed runs, as a Measurement's three speed figures. */
export function medianTimings(runs: readonly RunTiming[]): RunTiming {
  return {
    prefillTokensPerSecond: median(runs.map((r) => r.prefillTokensPerSecond)),
    decodeTokensPerSecond: median(runs.map((r) => r.decodeTokensPerSecond)),
    timeToFirstTokenMs: median(runs.map((r) => r.timeToFirstTokenMs)),
  };
}

/** One engine on its own: `runs` timed generations in a row. */
export async function measureAlone(open: Promise<EngineRuns>, runs: number): Promise<Measurement> {
  const e = await open;
  const timings: RunTiming[] = [];
  for (let i = 0; i < runs; i++) timings.push(await e.once());
  return e.finish(timings);
}

export interface BenchSpec {
  model: string;
  /** The same token ids for every engine (see benchPrompt). */
  prompt: number[];
  genTokens: number;
  runs: number;
  /** Also measure aggregate throughput with this many sequences at once (1 = skip). */
  concurrency: number;
}

/** The same prompt for every engine: BOS then deterministic pseudo-random ordinary token ids. */
export function benchPrompt(vocabSize: number, bos: number | undefined, n: number, avoid: (id: number) => boolean): number[] {
  const out: number[] = bos !== undefined ? [bos] : [];
  let s = 12345;
  while (out.length < n) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const id = s % vocabSize;
    if (!avoid(id)) out.push(id);
  }
  return out;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
