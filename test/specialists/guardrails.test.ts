/**
 * Every specialist's output guardrail on /v1/infer, on the tiny story model, which knows nothing of
 * labels, bullets, JSON or code: whatever it would rather write, the grammar gives the promised form.
 */
import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { contextSentences } from '../../protocol/guardrails/grounded.ts';
import { bearer, postJson } from '../http/helpers/harness.ts';
import { infer, quoted, specialistServer, STORY } from './helpers.ts';

const server = specialistServer();
const ask = (body: Record<string, unknown>) => infer(server.h(), server.key(), body);
const ajv = new Ajv({ strict: false, allErrors: true });

/** temperature, seed */
const RUNS: [number, number][] = [
  [0, 1],
  [1, 1],
  [1, 2],
];

const INPUTS = [
  'I love this park, it is wonderful!',
  'The food was cold and the waiter was rude.',
  'The meeting is at noon.',
  'Once upon a time there was a little cat.',
  'What a terrible, sad day.',
  'Best birthday ever!',
];

describe('classify', () => {
  it('answers exactly one label of the default set, with a confidence in (0, 1]', async () => {
    for (const [i, prompt] of INPUTS.entries()) {
      const r = await ask({ specialist: 'classify', prompt, temperature: i % 2, seed: i });
      expect(['positive', 'negative', 'neutral']).toContain(r.result);
      expect(r.finish_reason).toBe('stop');
      expect(r.confidence).toBeGreaterThan(0);
      expect(r.confidence).toBeLessThanOrEqual(1);
    }
  });

  it('answers a member of the request’s own label set, whatever the set', async () => {
    const sets = [
      ['yes', 'no'],
      ['sport', 'politics', 'science', 'art', 'music'],
      // Labels that are prefixes of others, and characters an EBNF string must escape.
      ['pos', 'positive', 'a "quoted" label', 'back\\slash'],
      ['ünïcödé', 'naïve', '東京'],
    ];
    for (const labels of sets) {
      for (const [temperature, seed] of RUNS) {
        const r = await ask({ specialist: 'classify', prompt: INPUTS[seed], labels, temperature, seed });
        expect(labels, JSON.stringify(r)).toContain(r.result);
        expect(r.confidence).toBeGreaterThan(0);
        expect(r.confidence).toBeLessThanOrEqual(1);
      }
    }
  });
});

describe('summarise', () => {
  const words = (s: string) => s.split(' ');

  it('gives only "- " bullet lines, at most 5 of them and 100 words in all, by default', async () => {
    for (const [temperature, seed] of RUNS) {
      const r = await ask({ specialist: 'summarise', prompt: STORY, temperature, seed, max_tokens: 50 });
      const lines = r.result.split('\n');
      expect(lines.length).toBeLessThanOrEqual(5);
      for (const line of lines) {
        expect(line, r.result).toMatch(/^- \S/);
        expect(words(line.slice(2)).every((w) => w.length > 0)).toBe(true);
      }
      expect(lines.flatMap((l) => words(l.slice(2))).length).toBeLessThanOrEqual(100);
    }
  });

  it('keeps max_bullets and max_words, and writes one paragraph for format prose', async () => {
    for (const [temperature, seed] of RUNS) {
      const bullets = await ask({ specialist: 'summarise', prompt: STORY, temperature, seed, max_bullets: 2, max_words: 10, max_tokens: 40 });
      const lines = bullets.result.split('\n');
      expect(lines.length).toBeLessThanOrEqual(2);
      expect(lines.every((l) => l.startsWith('- '))).toBe(true);
      expect(lines.flatMap((l) => words(l.slice(2))).length).toBeLessThanOrEqual(10);

      const prose = await ask({ specialist: 'summarise', prompt: STORY, temperature, seed, format: 'prose', max_words: 12, max_tokens: 40 });
      expect(prose.result).not.toContain('\n');
      expect(prose.result).not.toMatch(/^[-*#]/);
      expect(words(prose.result).length).toBeLessThanOrEqual(12);
      expect(words(prose.result).every((w) => w.length > 0)).toBe(true);
    }
  });
});

describe('extract', () => {
  const SCHEMA = {
    type: 'object',
    properties: {
      hero: { type: 'string', maxLength: 20 },
      age: { type: 'integer', minimum: 1, maximum: 12 },
      mood: { enum: ['happy', 'sad', 'calm'] },
      toys: { type: 'array', items: { type: 'object', properties: { name: { type: 'string', maxLength: 12 }, colour: { type: 'string', maxLength: 10 } }, required: ['name'] }, maxItems: 3 },
      score: { type: 'number', minimum: -1, maximum: 1 },
      sister: { type: ['string', 'null'], maxLength: 10 },
    },
    required: ['hero', 'mood', 'toys'],
  };

  it('always answers one JSON object', async () => {
    for (const [temperature, seed] of RUNS) {
      const r = await ask({ specialist: 'extract', prompt: STORY, temperature, seed, max_tokens: 80 });
      const v = JSON.parse(r.result);
      expect(typeof v === 'object' && v !== null && !Array.isArray(v), r.result).toBe(true);
    }
  });

  it('answers JSON valid under the request’s schema', async () => {
    for (const [temperature, seed] of RUNS) {
      const r = await ask({ specialist: 'extract', prompt: STORY, schema: SCHEMA, temperature, seed, max_tokens: 100 });
      expect(r.finish_reason).toBe('stop');
      expect(ajv.validate(SCHEMA, JSON.parse(r.result)), `${r.result} ${JSON.stringify(ajv.errors)}`).toBe(true);
    }
  });

  it('400s a schema the grammar cannot enforce, saying where', async () => {
    const res = await postJson(`${server.h().baseURL}/infer`, { specialist: 'extract', prompt: STORY, schema: { type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } } }, bearer(server.key()));
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error.param).toBe('schema');
    expect(error.message).toContain('schema at /properties/tags/uniqueItems');
  });
});

describe('qa', () => {
  const NOT_FOUND = 'The context does not contain the answer.';

  it('answers only with sentences quoted from the context, or the not-found answer', async () => {
    const sentences = contextSentences(STORY);
    expect(sentences).toHaveLength(6);
    for (const [temperature, seed] of RUNS) {
      const r = await ask({ specialist: 'qa', prompt: 'What colour was the ball?', context: STORY, temperature, seed, max_tokens: 100 });
      expect(r.result === NOT_FOUND || quoted(r.result, sentences), r.result).toBe(true);
    }
  });

  it('quotes from the prompt itself when no context is given', async () => {
    const prompt = `${STORY}\nWho helped Tom?`;
    const r = await ask({ specialist: 'qa', prompt, temperature: 1, seed: 3, max_tokens: 100 });
    expect(r.result === NOT_FOUND || quoted(r.result, contextSentences(prompt)), r.result).toBe(true);
  });

  it('gives exactly the not-found answer when the context has nothing to quote', async () => {
    const r = await ask({ specialist: 'qa', prompt: 'What colour was the ball?', context: ' \n ', max_tokens: 100 });
    expect(r.result).toBe(NOT_FOUND);
    expect(r.finish_reason).toBe('stop');
  });
});

describe('code', () => {
  const fenceLines = (s: string) => s.split('\n').filter((l) => l.startsWith('```'));

  it('starts every answer with a fenced block that is closed', async () => {
    for (const [temperature, seed] of RUNS) {
      const r = await ask({ specialist: 'code', prompt: 'Write a function that adds two numbers.', temperature, seed, max_tokens: 60 });
      expect(r.result.startsWith('```'), r.result).toBe(true);
      const fences = fenceLines(r.result);
      expect(fences.length).toBeGreaterThanOrEqual(2);
      expect(fences.length % 2, r.result).toBe(0);
      expect(r.result).toMatch(/^```[A-Za-z0-9_+#.-]*\n[\s\S]*\n?```/);
    }
  });

  // Too few tokens for the grammar's own closing (8): cut off, then closed by the service, `length`.
  // Enough (12, 20): the grammar steers into the closing fence within the budget, `stop`.
  it.each([
    [8, 'length'],
    [12, 'stop'],
    [20, 'stop'],
  ])('closes the block when max_tokens %d cuts the code off (finish_reason %s)', async (max_tokens, reason) => {
    const r = await ask({ specialist: 'code', prompt: 'Write a long program.', temperature: 0, max_tokens });
    expect(r.finish_reason).toBe(reason);
    expect(r.result.startsWith('```')).toBe(true);
    // The block is closed; on a loaded machine the budget check's time limit may close it earlier and
    // let a line of text follow, so only the fences are counted.
    expect(fenceLines(r.result).length % 2, r.result).toBe(0);
    expect(fenceLines(r.result).length).toBeGreaterThanOrEqual(2);
  });
});
