/** The loop's learning-rate schedule and epoch order, which resume relies on being functions of the step. */
import { describe, expect, it } from 'vitest';
import { epochOrder, learningRateAt, warmupSteps } from '../../engine/train/schedule.ts';

describe('learningRateAt', () => {
  it('warms up linearly to the peak, then decays linearly to 10% at the last step', () => {
    const total = 50;
    const w = warmupSteps(total);
    expect(w).toBe(5);
    const lrs = Array.from({ length: total }, (_, s) => learningRateAt(s, total, 1e-3));
    expect(lrs.slice(0, w)).toEqual([0.2e-3, 0.4e-3, 0.6e-3, 0.8e-3, 1e-3].map((v) => expect.closeTo(v, 12)));
    expect(lrs[w]).toBeCloseTo(1e-3, 12);
    expect(lrs[total - 1]).toBeCloseTo(1e-4, 12);
    for (let s = w + 1; s < total; s++) expect(lrs[s]).toBeLessThan(lrs[s - 1]);
    // Equal decrements after the warm-up.
    const d = lrs[w] - lrs[w + 1];
    for (let s = w + 1; s < total; s++) expect(lrs[s - 1] - lrs[s]).toBeCloseTo(d, 12);
  });

  it('short and long runs: one warm-up step at least, a hundred at most', () => {
    expect(warmupSteps(1)).toBe(1);
    expect(learningRateAt(0, 1, 0.01)).toBe(0.01);
    expect(learningRateAt(1, 2, 0.01)).toBe(0.01);
    expect(warmupSteps(100_000)).toBe(100);
  });
});

describe('epochOrder', () => {
  it('is a permutation, the same for the same (seed, epoch), different across epochs and seeds', () => {
    const a = epochOrder(100, 7, 0);
    expect([...a].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(epochOrder(100, 7, 0)).toEqual(a);
    expect(epochOrder(100, 7, 1)).not.toEqual(a);
    expect(epochOrder(100, 8, 0)).not.toEqual(a);
    expect(a).not.toEqual(Array.from({ length: 100 }, (_, i) => i));
  });
});
