/**
 * Guaranteed forms hold at every budget: for every max_tokens from the shortest answer's length up,
 * the constraint ends the output complete and valid within the budget. Random walks (any allowed token,
 * uniformly: far more hostile than a model) sweep densely; the real engine sweeps tool calls and a list
 * schema at temperature 0 and 1. Below the shortest answer, generation ends `length`.
 */
import { describe, expect, it } from 'vitest';
import { renderChat } from '../../engine/chat/index.ts';
import { TOOL_CALL_OPEN, compileGrammar, parseToolCalls, type GrammarSpec } from '../../engine/grammar/index.ts';
import type { Tokenizer } from '../../engine/tokenizer/types.ts';
import { bulletsGrammar, FENCED_CODE_GRAMMAR, groundedGrammar, labelsGrammar, proseGrammar } from '../../protocol/guardrails/ebnf.ts';
import { testEngine } from '../helpers/engine.ts';
import { ajv, randomWalk, seeded, shortestAnswer, SUMMARY_FIRST_WORD, SUMMARY_WORD, tokenizerOf } from './helpers.ts';

const TOOLS = [
  { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 20 }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city'] } },
  { name: 'add', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } },
];
/** Every new element is a whole object with required keys: one token (", {") adds a dozen. */
const LIST = { type: 'object', properties: { items: { type: 'array', items: { type: 'object', properties: { n: { type: 'string' }, q: { type: 'integer' } }, required: ['n', 'q'] } } }, required: ['items'] };
const LABELS = ['positive', 'negative', 'neutral'];
const SPANS = ['Tom had a red ball.', 'One day the ball rolled into the pond!'];
const NOT_FOUND = 'The context does not contain the answer.';

function validTools(text: string, atLeastOne: boolean): boolean {
  const p = parseToolCalls(text, TOOLS.map((t) => t.name));
  if (p.error !== undefined || (atLeastOne && p.calls.length === 0)) return false;
  return p.calls.every((c) => ajv.validate(TOOLS.find((t) => t.name === c.name)!.parameters, JSON.parse(c.arguments)));
}
const json = (schema: object) => (text: string) => {
  try {
    return ajv.validate(schema, JSON.parse(text)) as boolean;
  } catch {
    return false;
  }
};
const W = SUMMARY_WORD;
const BULLETS = new RegExp(`^- ${W}( ${W}){0,19}(\\n- ${W}( ${W}){0,19}){0,4}$`, 'u');
const PROSE = new RegExp(`^${SUMMARY_FIRST_WORD}( ${W}){0,99}$`, 'u');
const spans = (s: string): boolean => s === '' || SPANS.some((x) => (s === x || s.startsWith(`${x} `)) && spans(s.slice(x.length + 1)));

const FORMS: [string, GrammarSpec, (text: string) => boolean][] = [
  ['parallel tool calls', { type: 'tools', tools: TOOLS, choice: 'required', parallel: true }, (s) => validTools(s, true)],
  ['tool_choice auto', { type: 'tools', tools: TOOLS, choice: 'auto', parallel: true }, (s) => validTools(s, false)],
  ['json_schema list', { type: 'json_schema', schema: LIST, strict: true }, json(LIST)],
  ['json_object', { type: 'json_object' }, json({ type: 'object' })],
  ['labels (classify)', { type: 'ebnf', grammar: labelsGrammar(LABELS) }, (s) => LABELS.includes(s)],
  ['bullets (summarise)', { type: 'ebnf', grammar: bulletsGrammar(5, 20) }, (s) => BULLETS.test(s)],
  ['prose (summarise)', { type: 'ebnf', grammar: proseGrammar(100) }, (s) => PROSE.test(s)],
  ['grounded (qa)', { type: 'ebnf', grammar: groundedGrammar(NOT_FOUND, SPANS, 3) }, (s) => s === NOT_FOUND || (s !== '' && spans(s) && s.split(/(?<=[.!]) /).length <= 3)],
  ['fenced code (code)', { type: 'ebnf', grammar: FENCED_CODE_GRAMMAR }, (s) => /^```[A-Za-z0-9_+#.-]{0,32}\n/.test(s) && s.split('\n').filter((l) => l.startsWith('```')).length % 2 === 0],
];


/** Budgets: densely from the shortest answer up (where a plan that grows by a whole item bites), then sparse. */
function budgets(min: number, dense: number, largest = 4096): number[] {
  const out = new Set<number>();
  for (let b = Math.max(1, min); b <= min + dense; b++) out.add(b);
  for (const b of [96, 128, 256, 512, 1024, 4096]) if (b > min && b <= largest) out.add(b);
  return [...out];
}

describe.each([
  ['stories260K.gguf', 64, 2],
  ['llama-2-tiny-random.gguf', 8, 1],
])('random walks on %s: every budget from the shortest answer up ends complete and valid', (file, dense, seeds) => {
  it.each(FORMS)('%s', async (_, spec, valid) => {
    const t = await tokenizerOf(file);
    const g = await compileGrammar(t, spec);
    const min = await shortestAnswer(g, t);
    for (const b of budgets(min, dense)) {
      for (let seed = 1; seed <= seeds; seed++) {
        const c = await g.createConstraint({ maxTokens: b });
        const { text, tokens, done } = randomWalk(c, t, seeded(seed * 7919 + b), b);
        const what = `max_tokens ${b} (shortest ${min}), seed ${seed}: ${JSON.stringify(text)}`;
        expect(done && c.deadEnd === undefined, what).toBe(true);
        expect(tokens.length).toBeLessThanOrEqual(b);
        expect(valid(text), what).toBe(true);
        c.dispose();
      }
    }
  }, 300_000);
});

describe('the engine on stories260K: every budget from the shortest answer up ends stop and valid', () => {
  const prompt = (tokenizer: Tokenizer, chatTemplate: string | undefined, spec: GrammarSpec) =>
    renderChat({ tokenizer, chatTemplate }, [{ role: 'user', content: 'What is the weather in Paris and in Rome? Tell me a story.' }], {
      tools: spec.type === 'tools' ? spec.tools.map((f) => ({ type: 'function' as const, function: f })) : undefined,
    }).tokens;

  it.each(FORMS.slice(0, 2))('%s at temperature 0 and 1', async (_, spec, valid) => {
    const engine = await testEngine('stories260K.gguf');
    const g = await compileGrammar(engine.tokenizer, spec);
    const tokens = prompt(engine.tokenizer, engine.info.chatTemplate, spec);
    const min = await shortestAnswer(g, engine.tokenizer);
    // Up to 256 here: free text under tool_choice auto runs to the budget, and the walks cover 4096.
    const runs = budgets(min, 24, 256).flatMap((b) => [[b, 0, 0], ...(b % 3 === 0 ? [[b, 1, b]] : [])]);
    for (const [b, temperature, seed] of runs) {
      const constraint = await g.createConstraint({ maxTokens: b });
      const r = await engine.generate({ tokens, constraint, temperature, seed, maxTokens: b }).result;
      const what = `max_tokens ${b} (shortest ${min}), temperature ${temperature}: ${JSON.stringify(r.text)}`;
      // Under tool_choice auto a text answer is free text: it may rightly run to max_tokens.
      const freeText = spec.type === 'tools' && spec.choice === 'auto' && !r.text.startsWith(TOOL_CALL_OPEN);
      expect(r.finishReason, what).toBe(freeText ? r.finishReason : 'stop');
      expect(r.completionTokens).toBeLessThanOrEqual(b);
      expect(valid(r.text), what).toBe(true);
    }
    if (min > 1) {
      // Below the shortest answer: cut off, and said so.
      const constraint = await g.createConstraint({ maxTokens: min - 1 });
      const r = await engine.generate({ tokens, constraint, temperature: 0, maxTokens: min - 1 }).result;
      expect(r.finishReason).toBe('length');
      expect(valid(r.text)).toBe(false);
    }
  }, 300_000);
});
