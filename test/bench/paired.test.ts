import { describe, expect, it } from 'vitest';
import { medianTimings, type EngineRuns, type RunTiming } from '../../bench/measure.ts';
import { measurePaired } from '../../bench/paired.ts';

/** An engine whose runs report the machine's speed at the moment they run: how drift reaches a bench. */
function drifting(name: string, order: string[], clock: { t: number }, speed: number): () => Promise<EngineRuns> {
  return async () => {
    order.push(`open ${name}`);
    return {
      async once(): Promise<RunTiming> {
        order.push(name);
        const phase = 1 + clock.t++ * 0.5; // the machine gets faster with every run
        return { prefillTokensPerSecond: speed * phase, decodeTokensPerSecond: speed * phase, timeToFirstTokenMs: 100 / phase };
      },
      async finish(runs) {
        order.push(`finish ${name}`);
        return { engine: name, backend: 'test', promptTokens: 1, generatedTokens: 1, loadMs: 0, ...medianTimings(runs) };
      },
    };
  };
}

describe('paired bench runs', () => {
  it('opens one engine after the other, then alternates their runs, swapping the order each round', async () => {
    const order: string[] = [];
    const clock = { t: 0 };
    await measurePaired(drifting('ours', order, clock, 10), drifting('llama', order, clock, 20), 4);
    expect(order).toEqual(['open ours', 'open llama', 'ours', 'llama', 'llama', 'ours', 'ours', 'llama', 'llama', 'ours', 'finish ours', 'finish llama']);
  });

  it('on a machine that speeds up run by run, the ratio of medians stays near the engines\' true ratio', async () => {
    const clock = { t: 0 };
    const [a, b] = await measurePaired(drifting('ours', [], clock, 10), drifting('llama', [], clock, 20), 4);
    // True ratio 0.5; timed one engine after the other (medians 10·1.75 against 20·3.75) it would read 0.23.
    expect(a.decodeTokensPerSecond / b.decodeTokensPerSecond).toBeGreaterThan(0.45);
    expect(a.decodeTokensPerSecond / b.decodeTokensPerSecond).toBeLessThan(0.55);
  });
});
