/** svc finetune's progress display: a redrawn bar on a terminal, a short plain log elsewhere. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { FineTuneProgress } from '../../engine/train/types.ts';
import { createTrainingProgress } from '../../cli/train-progress.ts';

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  const stream = Object.assign(new Writable({ write: (c, _e, cb) => (chunks.push(String(c)), cb()) }), { isTTY, columns: 120 });
  return { stream, text: () => chunks.join(''), chunks };
}

const at = (step: number, loss: number): FineTuneProgress => ({ step, totalSteps: 40, epoch: step <= 20 ? 1 : 2, loss, tokensPerSecond: 1234.4, elapsedMs: step * 500, etaMs: (40 - step) * 500 });

describe('createTrainingProgress', () => {
  it('plain output: one line every 5% of the steps and the last, with mean loss, tok/s and time left', () => {
    const s = sink(false);
    let clock = 0;
    const p = createTrainingProgress({ stream: s.stream, now: () => clock++ });
    for (let step = 1; step <= 40; step++) {
      p.update(at(step, 3 - step * 0.05));
      if (step === 20) p.note('epoch 1/2: train loss 2.5000');
    }
    p.finish();
    const lines = s.text().trimEnd().split('\n');
    const stepLines = lines.filter((l) => l.startsWith('step'));
    expect(stepLines.map((l) => Number(/^step\s+(\d+)/.exec(l)![1]))).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 40]);
    expect(stepLines[0]).toBe('step  1/40  epoch 1  loss 2.9500  1234 tok/s  0:20 left  (0:01 elapsed)');
    // The loss shown is the mean of the last ten steps.
    expect(stepLines.at(-1)).toContain(`loss ${(3 - 35.5 * 0.05).toFixed(4)}`);
    expect(lines).toContain('epoch 1/2: train loss 2.5000');
    expect(s.text()).not.toContain('\r');
  });

  it('on a terminal: redraws one line in place (at most every 100 ms), notes on their own lines', () => {
    const s = sink(true);
    let clock = 0;
    const p = createTrainingProgress({ stream: s.stream, now: () => (clock += 30) });
    for (let step = 1; step <= 40; step++) {
      p.update(at(step, 2));
      if (step === 20) p.note('epoch 1/2: train loss 2.0000');
    }
    p.finish();
    const draws = s.chunks.filter((c) => c.startsWith('\rstep'));
    expect(draws.length).toBeGreaterThan(5);
    expect(draws.length).toBeLessThan(40);
    expect(draws[0]).toMatch(/^\rstep  1\/40  epoch 1 \[#?-+\] loss 2\.0000  1234 tok\/s  0:20 left\x1b\[K$/);
    expect(s.text()).toContain('\repoch 1/2: train loss 2.0000\x1b[K\n');
    expect(s.text().endsWith('\x1b[K\n')).toBe(true);
    expect(s.chunks.at(-1)).toMatch(/step 40\/40  epoch 2 \[#+\]/);
  });
});
