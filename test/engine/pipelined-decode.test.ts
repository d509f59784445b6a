/**
 * Pipelined decode: step N+1 submitted before step N is read, its tokens copied from step N's samples on
 * the GPU. Forced on here (the default adapter here, llvmpipe, runs submit on the calling thread, so the
 * engine leaves it off by default there): the same tokens as without it, for greedy and seeded sampling,
 * sequences of different lengths ending mid-run (their speculative row dropped), stop strings, and
 * sequences it must not pipeline (a grammar, penalties, top-k) alongside.
 */
import { describe, expect, it } from 'vitest';
import { compileGrammar } from '../../engine/grammar/index.ts';
import type { GenerateOptions } from '../../engine/types.ts';
import { testEngine } from '../helpers/engine.ts';

const ON = { pipelinedDecode: true, maxSequences: 4 };
const OFF = { pipelinedDecode: false, maxSequences: 4 };

/**
 * The requests at once on an idle engine, so both engines see the same steps (a step submitted ahead of
 * a batch's last read could otherwise still be running when the next batch arrives, and on SwiftShader
 * a row's logits depend on which kernels its step's size picks).
 */
async function batch(opts: { pipelinedDecode: boolean; maxSequences: number }, requests: GenerateOptions[]) {
  const engine = await testEngine('stories260K.gguf', opts);
  await engine.whenIdle();
  const before = engine.stats().steps;
  const results = await Promise.all(requests.map((r) => engine.generate(r).result));
  const after = engine.stats().steps;
  const delta = (k: 'pipelined' | 'ms' | 'hostMs' | 'submitMs' | 'waitMs') => after[k] - before[k];
  return { results, pipelined: delta('pipelined'), ms: delta('ms'), hostMs: delta('hostMs'), submitMs: delta('submitMs'), waitMs: delta('waitMs') };
}

describe('pipelined decode', () => {
  it('gives the same tokens as reading every step first: greedy and seeded, lengths ending mid-run, a stop string', async () => {
    const requests: GenerateOptions[] = [
      { prompt: 'Once upon a time', maxTokens: 40, temperature: 0 },
      { prompt: 'The little dog', maxTokens: 9, temperature: 0.9, seed: 11 },
      { prompt: 'Lily wanted to', maxTokens: 23, temperature: 1.2, seed: 5 },
      { prompt: 'Once upon a time', maxTokens: 40, temperature: 0, stop: ['park'] },
    ];
    const on = await batch(ON, requests);
    const off = await batch(OFF, requests);
    expect(off.pipelined).toBe(0);
    expect(on.pipelined).toBeGreaterThan(20);
    on.results.forEach((r, i) => {
      expect(r.tokens, `request ${i}`).toEqual(off.results[i].tokens);
      expect(r.text).toBe(off.results[i].text);
      expect(r.stoppedBy).toBe(off.results[i].stoppedBy);
    });
    expect(on.results.map((r) => r.completionTokens)).toEqual([40, 9, 23, on.results[3].completionTokens]);
    // Where a step's time went, both ways: encoding, submitting and waiting for samples are parts of the steps' time.
    for (const run of [on, off]) {
      expect(run.hostMs).toBeGreaterThan(0);
      expect(run.submitMs).toBeGreaterThan(0);
      expect(run.waitMs).toBeGreaterThanOrEqual(0);
      expect(run.hostMs + run.submitMs + run.waitMs).toBeLessThanOrEqual(run.ms + 1e-6);
    }
  });

  it('does not pipeline while a sequence needs the host between steps (a grammar, penalties, top-k), with the same tokens', async () => {
    const engine = await testEngine('stories260K.gguf', ON);
    const grammar = await compileGrammar(engine.tokenizer, { type: 'json_object' });
    const requests = async (): Promise<GenerateOptions[]> => [
      { prompt: 'Once upon a time', maxTokens: 30, temperature: 0 },
      // No closing budget: near max_tokens its mask check stops at a wall-clock deadline, so under load the
      // same request can be given fewer tokens; the plain grammar's masks depend on the tokens alone.
      { prompt: 'A cat', maxTokens: 12, temperature: 0, constraint: await grammar.createConstraint() },
    ];
    const on = await batch(ON, await requests());
    const off = await batch(OFF, await requests());
    on.results.forEach((r, i) => expect(r.tokens, `request ${i}`).toEqual(off.results[i].tokens));
    // Steps follow one another only after the constrained sequence ended.
    expect(on.pipelined).toBeLessThanOrEqual(30 - 12);
    for (const alone of [{ repetitionPenalty: 1.3 }, { topK: 5, seed: 3, temperature: 1 }]) {
      const r = await batch(ON, [{ prompt: 'Once upon a time', maxTokens: 12, temperature: 0, ...alone }]);
      const o = await batch(OFF, [{ prompt: 'Once upon a time', maxTokens: 12, temperature: 0, ...alone }]);
      expect(r.pipelined, JSON.stringify(alone)).toBe(0);
      expect(r.results[0].tokens).toEqual(o.results[0].tokens);
    }
  });
});
