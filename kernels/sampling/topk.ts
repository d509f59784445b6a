import source from './topk.wgsl?raw';
import type { KernelContext } from '../runtime/context.ts';
import { RowSamplingKernel } from './row-kernel.ts';

/** Candidates returned per row; top_k above this acts as this many. */
export const TOPK_MAX = 64;
/** Words per row of the top-k output: a 4-word header then K [token, value] pairs. */
export const TOPK_ROW_WORDS = 4 + 2 * TOPK_MAX;

export interface TopKRow {
  /** Candidates, highest value first (ties: lower token id first). */
  tokens: number[];
  /** logits / T of each candidate. */
  values: number[];
  /** log-sum-exp of logits / T over every allowed token of the row, so exp(value - lse) is its exact probability. */
  logSumExp: number;
}

/** Read one row of the kernel's output (from a mapped copy). */
export function readTopKRow(u32: Uint32Array, f32: Float32Array, row: number): TopKRow {
  const b = row * TOPK_ROW_WORDS;
  const n = u32[b];
  const pairs: [number, number][] = [];
  for (let k = 0; k < n; k++) pairs.push([u32[b + 4 + 2 * k], f32[b + 5 + 2 * k]]);
  pairs.sort((x, y) => y[1] - x[1] || x[0] - y[0]);
  return { tokens: pairs.map((p) => p[0]), values: pairs.map((p) => p[1]), logSumExp: f32[b + 2] };
}

/**
 * Exact top-K candidates per row (after mask and temperature) plus the row's log-sum-exp.
 * Bindings: logits, mask, settings (read), out (write).
 */
export class TopKKernel extends RowSamplingKernel {
  constructor(ctx: KernelContext) {
    // topk.wgsl's workgroup of 128 walks the vocabulary once for the maximum, once per bisection step
    // (28) and once to collect.
    super(ctx, 'topk', source, 128, 30, { K: TOPK_MAX });
  }
}
