/**
 * Our engine and llama.cpp timed in alternation: run i of one, then run i of the other, the order
 * swapped every round. On a shared VM the machine's speed drifts by half within minutes (llama.cpp's own
 * decode moved from 48 to 80 tok/s within one bench run, bench/results/README.md), so timing one engine's
 * runs and then the other's compared two machines; alternated, each pair of runs sees the same one, and
 * the ratios the targets are stated in mean something. Both engines stay loaded throughout.
 */
import type { EngineRuns, Measurement, RunTiming } from './measure.ts';

/** `a` and `b` open their engines, one after the other (so neither's load time counts the other's). */
export async function measurePaired(a: () => Promise<EngineRuns>, b: () => Promise<EngineRuns>, runs: number): Promise<[Measurement, Measurement]> {
  const first = await a();
  const second = await b();
  const ta: RunTiming[] = [];
  const tb: RunTiming[] = [];
  for (let i = 0; i < runs; i++) {
    if (i % 2 === 0) {
      ta.push(await first.once());
      tb.push(await second.once());
    } else {
      tb.push(await second.once());
      ta.push(await first.once());
    }
  }
  return [await first.finish(ta), await second.finish(tb)];
}
