/**
 * Every specialist's guaranteed form holds at every budget, end to end through /v1/infer: for each
 * max_tokens from the shortest valid answer up (densely, then up to 4096, which the context window
 * lowers), the answer is whole, valid and `stop`, at temperature 0 and 1. Below the shortest answer it
 * is `length`. The shortest answer is the grammar's own (the guardrail's plan compiled on this model),
 * plus the tokens the service keeps back to close a fence (code). `chat` has no form to guarantee.
 */
import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { compileGrammar } from '../../engine/grammar/index.ts';
import { contextSentences } from '../../protocol/guardrails/grounded.ts';
import { guardrailPlan } from '../../protocol/guardrails/plan.ts';
import type { OutputOptions } from '../../protocol/requests/extensions.ts';
import { shortestAnswer, SUMMARY_FIRST_WORD, SUMMARY_WORD } from '../grammar/helpers.ts';
import { testEngine } from '../helpers/engine.ts';
import { infer, quoted, specialistServer, STORY } from './helpers.ts';
import { loadSpecialists } from '../../adapters/config-node.ts';

const server = specialistServer();
const ajv = new Ajv({ strict: false, allErrors: true });

const SCHEMA = {
  type: 'object',
  properties: {
    hero: { type: 'string', maxLength: 20 },
    age: { type: 'integer', minimum: 1, maximum: 12 },
    toys: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, n: { type: 'number' } }, required: ['name', 'n'] } },
  },
  required: ['hero', 'toys'],
};
const LABELS = ['sport', 'politics', 'science'];
const NOT_FOUND = 'The context does not contain the answer.';
const W = SUMMARY_WORD;
const words = (s: string) => s.split(/[ \n]/).filter((w) => w !== '- ' && w !== '-').length;
const json = (schema: object) => (s: string) => {
  try {
    return ajv.validate(schema, JSON.parse(s)) as boolean;
  } catch {
    return false;
  }
};

interface Case {
  name: string;
  body: Record<string, unknown>;
  options: OutputOptions;
  valid: (result: string) => boolean;
}

const CASES: Case[] = [
  { name: 'classify', body: { specialist: 'classify', prompt: 'The match ended 2-1.' }, options: {}, valid: (s) => ['positive', 'negative', 'neutral'].includes(s) },
  { name: 'classify, own labels', body: { specialist: 'classify', prompt: 'The match ended 2-1.', labels: LABELS }, options: { labels: LABELS }, valid: (s) => LABELS.includes(s) },
  {
    name: 'summarise, bullets',
    body: { specialist: 'summarise', prompt: STORY, max_bullets: 3, max_words: 12 },
    options: { maxBullets: 3, maxWords: 12 },
    valid: (s) => new RegExp(`^- ${W}( ${W}){0,3}(\\n- ${W}( ${W}){0,3}){0,2}$`, 'u').test(s) && words(s) <= 12,
  },
  {
    name: 'summarise, prose',
    body: { specialist: 'summarise', prompt: STORY, format: 'prose', max_words: 10 },
    options: { format: 'prose', maxWords: 10 },
    valid: (s) => new RegExp(`^${SUMMARY_FIRST_WORD}( ${W}){0,9}$`, 'u').test(s),
  },
  { name: 'extract, json object', body: { specialist: 'extract', prompt: STORY }, options: {}, valid: json({ type: 'object' }) },
  { name: 'extract, schema', body: { specialist: 'extract', prompt: STORY, schema: SCHEMA }, options: { schema: SCHEMA }, valid: json(SCHEMA) },
  {
    name: 'qa',
    body: { specialist: 'qa', prompt: 'What colour was the ball?', context: STORY },
    options: { context: STORY },
    valid: (s) => s === NOT_FOUND || (s !== '' && quoted(s, contextSentences(STORY)) && s.split(/(?<=[.!?]) /).length <= 3),
  },
  {
    name: 'code',
    body: { specialist: 'code', prompt: 'Write a function that adds two numbers.' },
    options: {},
    valid: (s) => /^```[A-Za-z0-9_+#.-]{0,32}\n/.test(s) && s.split('\n').filter((l) => l.startsWith('```')).length % 2 === 0,
  },
];

/** The shortest answer /v1/infer can give whole: the grammar's, plus what is kept back to close a fence. */
async function minimum(c: Case): Promise<number> {
  const engine = await testEngine();
  const specialist = loadSpecialists().get(c.body.specialist as string)!;
  const plan = guardrailPlan(specialist, c.options, [{ role: 'user', content: c.body.prompt as string }]);
  const grammar = await compileGrammar(engine.tokenizer, plan.grammar!(engine.tokenizer));
  const reserve = plan.closing ? engine.tokenizer.encode(plan.closing.longest, { addBos: false }).length : 0;
  return (await shortestAnswer(grammar, engine.tokenizer)) + reserve;
}

/** Every budget from the minimum to 12 above it, then sparser up to 4096; temperature 1 at every third. */
function runs(min: number): [number, number, number][] {
  const budgets = new Set<number>();
  for (let b = min; b <= min + 12; b++) budgets.add(b);
  for (const b of [32, 64, 128, 512, 4096]) if (b > min) budgets.add(b);
  return [...budgets].flatMap((b) => [[b, 0, 0] as [number, number, number], ...(b % 3 === 0 || b >= 64 ? [[b, 1, b] as [number, number, number]] : [])]);
}

describe('every specialist through /v1/infer: each max_tokens from the shortest answer up ends stop and valid', () => {
  it.each(CASES)('$name', async (c) => {
    const min = await minimum(c);
    for (const [max_tokens, temperature, seed] of runs(min)) {
      const r = await infer(server.h(), server.key(), { ...c.body, max_tokens, temperature, seed });
      const what = `max_tokens ${max_tokens} (shortest ${min}), temperature ${temperature}: ${JSON.stringify(r.result)}`;
      expect(r.finish_reason, what).toBe('stop');
      expect(c.valid(r.result), what).toBe(true);
    }
    if (min > 1) {
      const r = await infer(server.h(), server.key(), { ...c.body, max_tokens: min - 1, temperature: 0 });
      expect(r.finish_reason, `max_tokens ${min - 1}: ${JSON.stringify(r.result)}`).toBe('length');
    }
  }, 300_000);
});
