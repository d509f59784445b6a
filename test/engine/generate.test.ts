/** Behaviour of the generation API: limits, sampling reproducibility, stops, abort, batching. */
import { describe, expect, it } from 'vitest';
import { EngineInputError } from '../../engine/types.ts';
import { testEngine } from '../helpers/engine.ts';

const PROMPT = 'Once upon a time';

async function run(opts: Parameters<Awaited<ReturnType<typeof testEngine>>['generate']>[0]) {
  const engine = await testEngine();
  const gen = engine.generate(opts);
  let text = '';
  const tokens: number[] = [];
  for await (const c of gen) {
    text += c.text;
    tokens.push(...c.tokens);
  }
  return { text, tokens, result: await gen.result };
}

describe('generate', () => {
  it('stops at maxTokens with finishReason length and counts tokens', async () => {
    const { result, tokens, text } = await run({ prompt: PROMPT, maxTokens: 7, temperature: 0 });
    expect(result.finishReason).toBe('length');
    expect(result.stoppedBy).toBe('max-tokens');
    expect(result.completionTokens).toBe(7);
    expect(tokens).toHaveLength(7);
    expect(result.promptTokens).toBe(5);
    expect(result.text).toBe(text);
    expect(result.timings.timeToFirstTokenMs).toBeGreaterThan(0);
  });

  it('ends at a stop string, which is not part of the output', async () => {
    const full = await run({ prompt: PROMPT, maxTokens: 30, temperature: 0 });
    expect(full.text).toContain('Lily');
    const cut = await run({ prompt: PROMPT, maxTokens: 30, temperature: 0, stop: ['Lily'] });
    expect(cut.result.finishReason).toBe('stop');
    expect(cut.result.stoppedBy).toBe('stop-sequence');
    expect(cut.text).toBe(full.text.slice(0, full.text.indexOf('Lily')));
  });

  it('sampling is reproducible for a seed and differs across seeds', async () => {
    const a = await run({ prompt: PROMPT, maxTokens: 24, temperature: 1, seed: 42 });
    const b = await run({ prompt: PROMPT, maxTokens: 24, temperature: 1, seed: 42 });
    const c = await run({ prompt: PROMPT, maxTokens: 24, temperature: 1, seed: 43 });
    expect(a.tokens).toEqual(b.tokens);
    expect(a.tokens).not.toEqual(c.tokens);
  });

  it('top-k 1 and a tiny top-p are greedy; top-k/top-p sampling is reproducible', async () => {
    const greedy = await run({ prompt: PROMPT, maxTokens: 16, temperature: 0 });
    const k1 = await run({ prompt: PROMPT, maxTokens: 16, temperature: 1.5, topK: 1, seed: 7 });
    const p0 = await run({ prompt: PROMPT, maxTokens: 16, temperature: 1.5, topP: 1e-6, seed: 8 });
    expect(k1.tokens).toEqual(greedy.tokens);
    expect(p0.tokens).toEqual(greedy.tokens);
    const s1 = await run({ prompt: PROMPT, maxTokens: 16, temperature: 1, topK: 20, topP: 0.9, seed: 5 });
    const s2 = await run({ prompt: PROMPT, maxTokens: 16, temperature: 1, topK: 20, topP: 0.9, seed: 5 });
    expect(s1.tokens).toEqual(s2.tokens);
  });

  it('a repetition penalty changes what greedy decoding repeats', async () => {
    const plain = await run({ prompt: PROMPT, maxTokens: 40, temperature: 0 });
    const penalised = await run({ prompt: PROMPT, maxTokens: 40, temperature: 0, repetitionPenalty: 1.8, presencePenalty: 0.5 });
    expect(penalised.tokens).not.toEqual(plain.tokens);
    const distinct = (t: number[]) => new Set(t).size / t.length;
    expect(distinct(penalised.tokens)).toBeGreaterThan(distinct(plain.tokens));
  });

  it('concurrent generations equal the same generations run alone (continuous batching)', async () => {
    const prompts = ['Once upon a time', 'The little dog', 'One day, a big bear', 'Lily and Tom went to the park. They saw'];
    const alone: number[][] = [];
    for (const p of prompts) alone.push((await run({ prompt: p, maxTokens: 20, temperature: 0 })).tokens);
    const together = await Promise.all(prompts.map((p, i) => run({ prompt: p, maxTokens: 20 - i * 3, temperature: 0 })));
    together.forEach((t, i) => expect(t.tokens).toEqual(alone[i].slice(0, 20 - i * 3)));
    const seeded = await Promise.all([1, 2, 3].map((s) => run({ prompt: PROMPT, maxTokens: 12, temperature: 0.9, seed: s })));
    for (const [i, s] of [1, 2, 3].entries()) expect(seeded[i].tokens).toEqual((await run({ prompt: PROMPT, maxTokens: 12, temperature: 0.9, seed: s })).tokens);
  });

  it('aborting stops generation and frees the sequence for others', async () => {
    const engine = await testEngine();
    const controller = new AbortController();
    const gen = engine.generate({ prompt: PROMPT, maxTokens: 500, temperature: 0.8, seed: 1, signal: controller.signal, stopAtEndOfGeneration: false });
    let n = 0;
    for await (const c of gen) {
      n += c.tokens.length;
      if (n >= 5) controller.abort();
    }
    const r = await gen.result;
    expect(r.stoppedBy).toBe('aborted');
    expect(r.completionTokens).toBeLessThan(20);
    expect(engine.stats().activeSequences).toBe(0);
    // Every slot and page is free again: as many long generations as there are slots all run.
    const after = await run({ prompt: PROMPT, maxTokens: 3, temperature: 0 });
    expect(after.result.completionTokens).toBe(3);
  });

  it('an already aborted signal ends at once', async () => {
    const engine = await testEngine();
    const r = await engine.generate({ prompt: PROMPT, signal: AbortSignal.abort() }).result;
    expect(r.stoppedBy).toBe('aborted');
    expect(r.completionTokens).toBe(0);
  });

  it('rejects bad input with an error naming the option, and stays usable', async () => {
    const engine = await testEngine();
    const bad: [object, string][] = [
      [{ prompt: PROMPT, maxTokens: 0 }, 'maxTokens'],
      [{ prompt: PROMPT, temperature: -1 }, 'temperature'],
      [{ prompt: PROMPT, topP: 0 }, 'topP'],
      [{ prompt: PROMPT, topK: 1.5 }, 'topK'],
      [{ prompt: PROMPT, stop: [''] }, 'stop'],
      [{ tokens: [1, 99999] }, 'tokens'],
      [{}, 'prompt'],
      [{ prompt: 'a'.repeat(20000) }, 'prompt'],
    ];
    for (const [opts, param] of bad) {
      let err: unknown;
      try {
        engine.generate(opts);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(opts).slice(0, 60)).toBeInstanceOf(EngineInputError);
      expect((err as EngineInputError).param).toBe(param);
      expect((err as Error).message).toMatch(new RegExp(param));
    }
    expect((await run({ prompt: PROMPT, maxTokens: 2 })).tokens).toHaveLength(2);
  });

  it('a completion runs until the context is full', async () => {
    const engine = await testEngine('stories260K.gguf', { contextLength: 24 });
    const gen = engine.generate({ prompt: PROMPT, maxTokens: 100, temperature: 0, stopAtEndOfGeneration: false });
    const r = await gen.result;
    expect(r.finishReason).toBe('length');
    expect(r.stoppedBy).toBe('context-full');
    expect(r.promptTokens + r.completionTokens).toBe(24);
  });
});
