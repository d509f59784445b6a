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
