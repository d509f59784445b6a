/**
 * Top-k / top-p sampling over the GPU's top-K candidates. Candidate probabilities are exact (normalised by
 * the whole vocabulary's log-sum-exp), so top-p cuts at the true cumulative mass; only if the nucleus
 * would need more than TOPK_MAX tokens is it truncated to those.
 */
import type { TopKRow } from '../../kernels/sampling/topk.ts';

export function sampleCandidates(row: TopKRow, topK: number, topP: number, random: () => number): { token: number; logprob: number } {
  const n = topK > 0 ? Math.min(topK, row.tokens.length) : row.tokens.length;
  if (n === 0) throw new Error('no candidate tokens to sample from');
  const probs: number[] = [];
  let kept = 0;
  let mass = 0;
  for (let i = 0; i < n; i++) {
    const p = Math.exp(row.values[i] - row.logSumExp);
    probs.push(p);
    mass += p;
    kept = i + 1;
    if (mass >= topP) break;
  }
  let u = random() * mass;
  for (let i = 0; i < kept; i++) {
    u -= probs[i];
    if (u < 0) return { token: row.tokens[i], logprob: row.values[i] - row.logSumExp };
  }
  return { token: row.tokens[kept - 1], logprob: row.values[kept - 1] - row.logSumExp };
}
