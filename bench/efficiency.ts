/**
 * The engine's speed as work done: decode as GB/s of weights streamed, prefill as GFLOP/s, and each as a
 * share of what the adapter's probes reached (bench/limits.ts), when they ran in the same bench run.
 */
import type { GgufTensorInfo } from '../engine/gguf/parse.ts';
import type { AdapterLimits } from '../kernels/probes/limits.ts';
import type { Measurement } from './measure.ts';

/** Weight matrices every token reads. */
export interface WeightTraffic {
  bytes: number;
  params: number;
}

export interface Efficiency {
  /** Weight bytes read per token × decode tokens/s, in GB/s. */
  decodeWeightGBps: number;
  /** decodeWeightGBps as a percentage of the adapter's streaming-read probe. */
  decodeReadPercent?: number;
  /** 2 × weight parameters × prefill tokens/s, in GFLOP/s (attention's own FLOPs left out). */
  prefillGflops: number;
  /** prefillGflops as a percentage of the adapter's FMA probe. */
  prefillFmaPercent?: number;
}

/**
 * The matrices a token multiplies with. The embedding table is only gathered (one row per token), so it
 * counts only when it doubles as the output head (no separate output.weight); norm vectors are too small
 * to matter and are left out.
 */
export function weightTraffic(tensors: readonly GgufTensorInfo[]): WeightTraffic {
  const untied = tensors.some((t) => t.name === 'output.weight');
  let bytes = 0;
  let params = 0;
  for (const t of tensors) {
    if (t.dims.filter((d) => d > 1).length < 2) continue;
    if (t.name === 'token_embd.weight' && untied) continue;
    bytes += t.byteSize;
    params += t.elements;
  }
  return { bytes, params };
}

export function efficiency(m: Measurement, w: WeightTraffic, limits?: AdapterLimits): Efficiency {
  const decodeWeightGBps = (w.bytes * m.decodeTokensPerSecond) / 1e9;
  const prefillGflops = (2 * w.params * m.prefillTokensPerSecond) / 1e9;
  const e: Efficiency = { decodeWeightGBps: round(decodeWeightGBps), prefillGflops: round(prefillGflops) };
  if (limits) {
    e.decodeReadPercent = round((100 * decodeWeightGBps) / limits.streamReadGBps);
    e.prefillFmaPercent = round((100 * prefillGflops) / limits.fmaGflops);
  }
  return e;
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
