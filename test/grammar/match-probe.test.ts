/**
 * The sandbox's walk through a new grammar: a stall of the machine on one walk (a loaded CI host stalled a
 * 7 ms step to 481 ms) does not refuse a grammar; a step slow on every walk does, naming the limit; and a
 * step far over the limit refuses it at once, so a hostile grammar costs the shared sandbox one walk.
 */
import { describe, expect, it } from 'vitest';
import { compileGrammar, GrammarInputError, type CompiledGrammar } from '../../engine/grammar/index.ts';
import { probeMatching, type Walkable } from '../../engine/grammar/isolated/match-probe.ts';
import { tokenizerOf } from './helpers.ts';

const SCHEMA = { type: 'object', properties: { city: { type: 'string', maxLength: 16 }, days: { type: 'integer' } }, required: ['city'] };
const PROBE = { tokens: 16, stepMs: 100, seed: 1 };

function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/**
 * The real grammar, but the `stallAt`-th mask() of the walks numbered in `stalledWalks` blocks the
 * thread for `stallMs` (250) ms, as a descheduled thread would; counts the walks (each starts with an unbudgeted
 * constraint, then a budgeted one if the first went well).
 */
function stalling(grammar: CompiledGrammar, stalledWalks: (walk: number) => boolean, stallMs = 250, stallAt = 3): Walkable & { walks: () => number } {
  let walks = 0;
  return {
    walks: () => walks,
    async createConstraint(opts) {
      const c = await grammar.createConstraint(opts);
      if (opts?.maxTokens !== undefined) return c;
      if (!stalledWalks(++walks)) return c;
      let masks = 0;
      const mask = c.mask.bind(c);
      c.mask = () => {
        if (++masks === stallAt) busyWait(stallMs);
        return mask();
      };
      return c;
    },
  };
}

describe('probeMatching', () => {
  it('passes a quick grammar on its first walk', async () => {
    const g = stalling(await compileGrammar(await tokenizerOf('stories260K.gguf'), { type: 'json_schema', schema: SCHEMA }), () => false);
    await probeMatching(g, PROBE, 'schema');
    expect(g.walks()).toBe(1);
  });

  it('a stall on one walk is retried, not blamed on the grammar', async () => {
    const g = stalling(await compileGrammar(await tokenizerOf('stories260K.gguf'), { type: 'json_schema', schema: SCHEMA }), (walk) => walk === 1);
    await probeMatching(g, PROBE, 'schema');
    expect(g.walks()).toBe(2);
  });

  it('a step slow on every walk refuses the grammar, naming the parameter, the time and the limit', async () => {
    const g = stalling(await compileGrammar(await tokenizerOf('stories260K.gguf'), { type: 'json_schema', schema: SCHEMA }), () => true);
    const failure = await probeMatching(g, PROBE, 'schema').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(GrammarInputError);
    expect((failure as GrammarInputError).param).toBe('schema');
    expect((failure as GrammarInputError).message).toMatch(/^schema: following it is too slow: one token took \d+ ms to check \(at most 100 ms, in each of 3 tries\)/);
    expect(g.walks()).toBe(3);
  });

  it('a step three times the limit or more refuses the grammar on its first walk', async () => {
    const g = stalling(await compileGrammar(await tokenizerOf('stories260K.gguf'), { type: 'json_schema', schema: SCHEMA }), () => true, 350);
    const failure = await probeMatching(g, PROBE, 'schema').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((failure as GrammarInputError).message).toMatch(/^schema: following it is too slow: one token took \d+ ms to check \(at most 100 ms\); simplify it/);
    expect(g.walks()).toBe(1);
  });
});
