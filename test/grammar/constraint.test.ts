/**
 * The TokenConstraint over real vocabularies: mask bits agree with what the grammar accepts, walks that
 * sample any allowed token always end in valid output, jump-forward, budgets, and failures.
 */
import { describe, expect, it } from 'vitest';
import { compileGrammar, GrammarEngineError, type GrammarSpec } from '../../engine/grammar/index.ts';
import type { Tokenizer } from '../../engine/tokenizer/types.ts';
import { ajv, allowedTokens, randomWalk, seeded, tokenizerOf } from './helpers.ts';

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    score: { type: 'number', minimum: -1.5, maximum: 2.5 },
    tags: { type: 'array', items: { type: 'string', enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 3 },
    address: { type: 'object', properties: { city: { type: 'string', minLength: 1, maxLength: 20 }, zip: { type: 'string', pattern: '^[0-9]{5}$' } }, required: ['city'] },
    kind: { enum: ['cat', 'dog', null] },
    ok: { type: 'boolean' },
  },
  required: ['name', 'age', 'tags'],
};

describe.each(['stories260K.gguf', 'llama-2-tiny-random.gguf'])('constraint on %s', (file) => {
  it('mask bits agree with the grammar: allowed tokens are accepted, others rejected (sampled)', async () => {
    const t = await tokenizerOf(file);
    const g = await compileGrammar(t, { type: 'json_schema', schema: PERSON });
    const random = seeded(5);
    const walk = await g.createConstraint();
    const prefix: number[] = [];
    let checked = 0;
    for (let step = 0; step < 40 && !walk.isDone(); step++) {
      const mask = walk.mask();
      expect(mask.length).toBe(Math.ceil(t.vocabSize / 32));
      const allowed = new Set(allowedTokens(mask, t.vocabSize));
      // Replaying the prefix on a second matcher and offering a candidate is a clone of this state.
      const candidates = [...[...allowed].slice(0, 3), ...Array.from({ length: 5 }, () => Math.floor(random() * t.vocabSize))];
      for (const cand of candidates) {
        const probe = await g.createConstraint();
        for (const tok of prefix) probe.accept(tok);
        if (allowed.has(cand)) {
          expect(() => probe.accept(cand), `token ${cand} allowed by the mask`).not.toThrow();
        } else if (!t.isEndOfGeneration(cand)) {
          // Not allowed: the grammar rejects it, unless only our UTF-8 guard removed it.
          const bytes = t.tokenBytes(cand);
          const guardOnly = bytes.length > 0 && bytes.some((b) => b >= 0x80);
          if (!guardOnly) expect(() => probe.accept(cand), `token ${cand} not allowed`).toThrow(/the grammar rejected token/);
        }
        probe.dispose();
        checked++;
      }
      const list = [...allowed];
      const next = list[Math.floor(random() * list.length)];
      walk.accept(next);
      prefix.push(next);
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('reuses one mask buffer and leaves the bits past the vocabulary clear', async () => {
    const t = await tokenizerOf(file);
    const c = await (await compileGrammar(t, { type: 'json_object' })).createConstraint();
    const a = c.mask();
    c.accept(allowedTokens(a, t.vocabSize)[0]);
    const b = c.mask();
    expect(b).toBe(a);
    const extra = b.length * 32 - t.vocabSize;
    if (extra > 0) expect(b[b.length - 1] >>> (32 - extra)).toBe(0);
  });

  const specs: [string, GrammarSpec, (v: unknown) => boolean][] = [
    ['json_object', { type: 'json_object' }, (v) => typeof v === 'object' && v !== null && !Array.isArray(v)],
    ['json_schema', { type: 'json_schema', schema: PERSON }, (v) => ajv.validate(PERSON, v) as boolean],
    // Free text inside a fenced block: only a line end and a fence close it (the greedy closing walk cannot).
    ['fenced code', { type: 'ebnf', grammar: FENCED }, (v) => typeof v === 'string' && /^```[a-z]*\n([^`\n][^\n]*\n)*```$/.test(v)],
  ];
  it.each(specs)('random walks under %s always give valid output within the budget (maxTokens)', async (_, spec, valid) => {
    const t = await tokenizerOf(file);
    const g = await compileGrammar(t, spec);
    for (let seed = 1; seed <= 25; seed++) {
      const budget = 48 + seed * 4;
      const c = await g.createConstraint({ maxTokens: budget });
      const { text, tokens, done } = randomWalk(c, t, seeded(seed), budget);
      expect(done, `seed ${seed}: ${text}`).toBe(true);
      expect(tokens.length).toBeLessThanOrEqual(budget);
      let value: unknown = text;
      if (spec.type !== 'ebnf') expect(() => (value = JSON.parse(text)), `seed ${seed}: ${JSON.stringify(text)}`).not.toThrow();
      expect(valid(value), `seed ${seed}: ${text} ${JSON.stringify(ajv.errors)}`).toBe(true);
      c.dispose();
    }
  });
});


const FENCED = `root ::= "\`\`\`" [a-z]{0,8} "\\n" line* "\`\`\`"
line ::= [^\`\\n] [^\\n]* "\\n"
`;

describe('jump-forward', () => {
  it('offers the tokens a schema forces, without advancing; accepting them reaches the choice', async () => {
    const t = await tokenizerOf('llama-2-tiny-random.gguf');
    const schema = { type: 'object', properties: { temperature: { type: 'number' } }, required: ['temperature'] };
    const c = await (await compileGrammar(t, { type: 'json_schema', schema })).createConstraint();
    expect(c.forcedText()).toBe('{"temperature": ');
    const forced = c.forcedTokens();
    expect(forced.length).toBeGreaterThan(0);
    expect(t.decode(forced)).toBe('{"temperature": ');
    expect(c.forcedTokens()).toEqual(forced); // pure
    for (const tok of forced) {
      expect(c.mask()[tok >>> 5] & (1 << (tok & 31))).not.toBe(0);
      c.accept(tok);
    }
    expect(c.forcedTokens()).toEqual([]); // a number: the model's choice
    expect(c.forcedTokens(2)).toHaveLength(0);
  });

  it('is capped by limit and empty at a real choice', async () => {
    const t = await tokenizerOf('stories260K.gguf');
    const schema = { type: 'object', properties: { a_rather_long_property_name: { type: 'boolean' } }, required: ['a_rather_long_property_name'] };
    const c = await (await compileGrammar(t, { type: 'json_schema', schema })).createConstraint();
    expect(c.forcedTokens(3)).toHaveLength(3);
    const free = await (await compileGrammar(t, { type: 'json_object' })).createConstraint();
    free.accept(free.forcedTokens()[0]); // "{"
    expect(free.forcedTokens()).toEqual([]); // a key or "}"
  });
});

describe('failures', () => {
  it('a token the mask did not allow throws, naming the token and its text', async () => {
    const t = await tokenizerOf('stories260K.gguf');
    const c = await (await compileGrammar(t, { type: 'json_object' })).createConstraint();
    const a = tokenFor(t, 'a');
    expect(() => c.accept(a)).toThrow(GrammarEngineError);
    expect(() => c.accept(a)).toThrow(`the grammar rejected token ${a} ${JSON.stringify(t.tokenText(a))} after "": it was sampled although the mask did not allow it`);
    expect(() => c.accept(99999)).toThrow('token 99999 is outside the vocabulary (0..511)');
  });

  it('a character the vocabulary lacks: an error at compile time if forced, else a dead end that ends generation', async () => {
    const t = await tokenizerOf('TinyStories-656K-Q8_0.gguf');
    const forced = await compileGrammar(t, { type: 'ebnf', grammar: 'root ::= "a" "{"' }).catch((e: Error) => e);
    expect(String(forced)).toContain('grammar: this model\'s vocabulary cannot write what the grammar requires; the grammar requires "{" after "a" and no token of this model contains "{"');
    const c = await (await compileGrammar(t, { type: 'ebnf', grammar: 'root ::= ("a" | "b") "{"' })).createConstraint();
    expect(c.isDone()).toBe(false);
    c.accept(tokenFor(t, 'a'));
    expect(c.isDone()).toBe(true);
    expect(allowedTokens(c.mask(), t.vocabSize)).toEqual([]);
    expect(c.deadEnd).toBe('no token of this model\'s vocabulary can continue the grammar after "a"');
  });
});

/** The token whose bytes are exactly `text`. */
function tokenFor(t: Tokenizer, text: string): number {
  for (let id = 0; id < t.vocabSize; id++) if (!t.isControl(id) && new TextDecoder().decode(t.tokenBytes(id)) === text) return id;
  throw new Error(`no token is ${JSON.stringify(text)}`);
}
