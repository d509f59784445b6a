/** Learning-rate schedule and epoch order of the training loop: pure functions of (settings, step), so a resumed run repeats them exactly. */
import { seededRandom } from '../generate/rng.ts';

/** Warm-up steps for a run of `totalSteps`: a tenth of the run, at least 1, at most 100. */
export function warmupSteps(totalSteps: number): number {
  return Math.max(1, Math.min(100, Math.round(totalSteps / 10)));
}

/**
 * Learning rate of 0-based optimizer step `step`: linear warm-up from peak/W to the peak over the first W
 * steps, then linear decay to 10% of the peak at the last step.
 */
export function learningRateAt(step: number, totalSteps: number, peak: number): number {
  const w = warmupSteps(totalSteps);
  if (step < w) return (peak * (step + 1)) / w;
  const decaySteps = totalSteps - w - 1;
  if (decaySteps <= 0) return peak;
  return peak * (1 - (0.9 * Math.min(step - w, decaySteps)) / decaySteps);
}

/** The order of `count` examples in epoch `epoch` (0-based): a Fisher–Yates shuffle seeded by (seed, epoch). */
export function epochOrder(count: number, seed: number, epoch: number): number[] {
  // Mixing the epoch in with a large odd multiplier keeps nearby (seed, epoch) pairs' streams apart.
  const random = seededRandom((Math.imul(seed >>> 0, 0x9e3779b1) + Math.imul(epoch + 1, 0x85ebca6b)) >>> 0);
  const order = Array.from({ length: count }, (_, i) => i);
  for (let i = count - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}
