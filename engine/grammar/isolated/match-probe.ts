/**
 * The sandbox's check that a newly compiled grammar is quick to follow, not only quick to compile: a
 * seeded random walk through it, timing every step.
 */
import type { CompiledGrammar } from '../compile.ts';
import { GrammarInputError } from '../errors.ts';
import type { MatchProbe } from './messages.ts';

/** All the probe needs of a grammar. */
export type Walkable = Pick<CompiledGrammar, 'createConstraint'>;

/** Walks of the probe a grammar gets: it is refused only when a step is over the limit in every one. */
const PROBE_WALKS = 3;
/**
 * A step this many times over the limit refuses the grammar on the walk that met it. Each replay costs the
 * shared sandbox the slow step again, so only steps a stall could explain (481 ms against 250 in CI) are
 * replayed; a (a*)*b pattern's steps take a second or more.
 */
const STALL_FACTOR = 3;

/**
 * Follow the grammar for `probe.tokens` random allowed tokens, twice: without a budget (xgrammar's
 * matching) and with one that ends there (our search for a way to close the output near max_tokens, whose
 * cost also depends on the grammar); refuse it if any step, or starting, takes longer than the limit.
 *
 * Wall time is all a worker thread can measure, and a loaded machine can stall any thread for hundreds of
 * milliseconds (a CI run saw one 7 ms step take 481 ms), so a step up to STALL_FACTOR times over the limit
 * does not refuse a grammar at once: the same seeded walk is replayed, and the grammar is refused only
 * when every walk meets a slow step. A grammar that is slow to follow is slow on every walk; a stall is not.
 */
export async function probeMatching(grammar: Walkable, probe: MatchProbe, param: string): Promise<void> {
  for (let walk = 1; ; walk++) {
    const slowMs = await firstSlowStep(grammar, probe);
    if (slowMs === undefined) return;
    if (walk === PROBE_WALKS || slowMs >= STALL_FACTOR * probe.stepMs) {
      const tries = walk > 1 ? `, in each of ${walk} tries` : '';
      throw new GrammarInputError(
        `${param}: following it is too slow: one token took ${Math.round(slowMs)} ms to check (at most ${probe.stepMs} ms${tries}); simplify it (nested repetition in a pattern, such as (a*)*, is the usual cause)`,
        param,
      );
    }
  }
}

/** One seeded walk of the probe: the time of its first step over the limit, or undefined when none was. */
async function firstSlowStep(grammar: Walkable, probe: MatchProbe): Promise<number | undefined> {
  let state = probe.seed >>> 0 || 1;
  for (const maxTokens of [undefined, probe.tokens]) {
    const started = performance.now();
    const c = await grammar.createConstraint({ maxTokens });
    try {
      const startMs = performance.now() - started;
      if (startMs > probe.stepMs) return startMs;
      for (let n = 0; n < probe.tokens && !c.isDone(); n++) {
        const t0 = performance.now();
        const mask = c.mask();
        const allowed: number[] = [];
        for (let w = 0; w < mask.length; w++) {
          for (let bits = mask[w]; bits !== 0; bits &= bits - 1) allowed.push(w * 32 + (31 - Math.clz32(bits & -bits)));
        }
        if (allowed.length === 0) break;
        state = (Math.imul(state, 1103515245) + 12345) >>> 0;
        c.accept(allowed[state % allowed.length]);
        if (!c.isDone()) c.forcedTokens(8);
        const ms = performance.now() - t0;
        if (ms > probe.stepMs) return ms;
      }
    } finally {
      c.dispose();
    }
  }
  return undefined;
}
