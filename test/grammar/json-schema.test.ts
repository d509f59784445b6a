/**
 * JSON Schema in: the checks (every error names where and what), strict versus best effort, and our own
 * number and string-length grammars, which replace xgrammar's wrong ones, fuzzed against the bounds.
 */
import { describe, expect, it } from 'vitest';
import { compileGrammar, GrammarInputError, prepareJsonSchema, xgrammarRuntime } from '../../engine/grammar/index.ts';
import { numberRangeRules, type NumberBounds } from '../../engine/grammar/number-range.ts';
import { stringLengthRules } from '../../engine/grammar/string-length.ts';
import { seeded, tokenizerOf } from './helpers.ts';

const err = (schema: unknown, strict = false) => {
  try {
    prepareJsonSchema(schema, { strict });
  } catch (e) {
    expect(e).toBeInstanceOf(GrammarInputError);
    expect((e as GrammarInputError).param).toBe('schema');
    return (e as Error).message;
  }
  throw new Error('no error');
};

describe('schema checks', () => {
  it('names the pointer and the problem for malformed keywords', () => {
    expect(err({ type: 'strnig' })).toMatch(/schema at \/type: must be one of string, number.* \(got "strnig"\)/);
    expect(err({ type: 'object', required: 'a' })).toBe('schema at /required: must be an array of property names (got "a")');
    expect(err({ type: 'object', properties: { a: { type: 'string', minLength: '3' } } })).toBe('schema at /properties/a/minLength: must be a non-negative integer (got "3")');
    expect(err({ type: 'array', minItems: 3, maxItems: 1 })).toBe('schema at /minItems: minItems 3 is greater than maxItems 1');
    expect(err({ type: 'integer', minimum: 5, maximum: 4 })).toBe('schema: no integer satisfies its bounds (minimum 5, maximum 4)');
    expect(err({ enum: [] })).toBe('schema at /enum: must be a non-empty array (got an array)');
    expect(err({ $ref: '#/$defs/missing' })).toBe('schema at /$ref: reference "#/$defs/missing" points to nothing');
    expect(err({ $ref: 'https://example.com/s.json' })).toMatch(/only references inside the schema/);
    expect(err('{"type": ')).toMatch(/^schema is not valid JSON: /);
    expect(err(false)).toBe('schema: is `false`, which no value satisfies');
  });

  it('strict refuses what the grammar cannot enforce; otherwise it is dropped with a warning', () => {
    for (const [schema, key] of [
      [{ type: 'array', items: { type: 'integer' }, uniqueItems: true }, 'uniqueItems'],
      [{ type: 'integer', multipleOf: 3 }, 'multipleOf'],
      [{ not: { type: 'string' } }, 'not'],
      [{ type: 'string', pattern: '(?=a)b' }, 'pattern'],
      [{ type: 'string', format: 'credit-card' }, 'format'],
      [{ type: 'object', maxLenght: 3 }, 'maxLenght'],
    ] as const) {
      expect(err(schema, true)).toContain(key);
      const p = prepareJsonSchema(schema, { strict: false });
      expect(p.warnings.join('\n')).toContain(key);
    }
    expect(err({ type: 'string', pattern: '(?=a)b' }, true)).toBe(
      'schema at /pattern: pattern "(?=a)b" uses a lookaround assertion, which grammars cannot express; it cannot be enforced by the grammar (leave out strict to drop it)',
    );
  });

  it('never lets the model invent keys of an object that lists its properties', () => {
    const p = prepareJsonSchema({ type: 'object', properties: { a: { type: 'string' } }, required: ['a', 'b'] }, { strict: true });
    expect(p.schema).toEqual({ type: 'object', properties: { a: { type: 'string' }, b: {} }, required: ['a', 'b'], additionalProperties: false });
    expect(prepareJsonSchema({ type: 'object' }, { strict: true }).schema).toEqual({ type: 'object' });
  });

  it('reads draft-4 forms (tuple items, boolean exclusive bounds) and OpenAPI nullable', () => {
    const p = prepareJsonSchema({ type: 'array', items: [{ type: 'string' }], additionalItems: false }, { strict: true });
    expect(p.schema).toEqual({ type: 'array', prefixItems: [{ type: 'string' }], items: false });
    const n = prepareJsonSchema({ type: 'number', minimum: 0, exclusiveMinimum: true, nullable: true }, { strict: true });
    expect(n.schema).toEqual({ anyOf: [{ const: '__svc_number_0__' }, { type: 'null' }] });
  });

  it('an invalid schema is a 400-style error from compileGrammar too, and so is a grammar the vocabulary cannot start', async () => {
    const small = await tokenizerOf('stories260K.gguf');
    await expect(compileGrammar(small, { type: 'json_schema', schema: { type: 'object', required: 7 } })).rejects.toThrow(GrammarInputError);
    const noBraces = await tokenizerOf('TinyStories-656K-Q8_0.gguf');
    await expect(compileGrammar(noBraces, { type: 'json_object' })).rejects.toThrow(
      'response_format: this model\'s vocabulary cannot write what the grammar requires; the grammar requires "{" at the start and no token of this model contains "{"',
    );
    // A schema whose values the vocabulary can write is fine: a string enum needs only quotes and letters.
    const g = await compileGrammar(noBraces, { type: 'json_schema', schema: { enum: ['yes', 'no'] } });
    expect(g.kind).toBe('json_schema');
  });
});

/** Whether `s` is a number the grammar should write: canonical JSON, ≤ `digits` fraction digits, within bounds. */
function expected(b: NumberBounds, s: string, digits: number): boolean {
  const m = /^-?(0|[1-9][0-9]*)(\.([0-9]+))?$/.exec(s);
  if (!m || /^-0(\.0+)?$/.test(s)) return false;
  if (b.integer && m[2]) return false;
  if (m[3] && m[3].length > digits) return false;
  const v = Number(s);
  if (b.minimum !== undefined && v < b.minimum) return false;
  if (b.maximum !== undefined && v > b.maximum) return false;
  if (b.exclusiveMinimum !== undefined && v <= b.exclusiveMinimum) return false;
  if (b.exclusiveMaximum !== undefined && v >= b.exclusiveMaximum) return false;
  return true;
}

describe('our grammars for numbers and string lengths', () => {
  const BOUNDS: NumberBounds[] = [
    { integer: false, minimum: -1.5, maximum: 2.5 },
    { integer: false, minimum: 0, maximum: 100 },
    { integer: true, minimum: -5, maximum: 120 },
    { integer: false, exclusiveMinimum: 0.5 },
    { integer: true, exclusiveMaximum: 0 },
    { integer: false, minimum: -273.15, maximum: 1000 },
    { integer: true, minimum: 1, maximum: 31 },
    { integer: false, maximum: -0.25 },
    { integer: false, minimum: 1e-7, maximum: 1e-6 },
  ];

  it('accept exactly the canonical numbers within the bounds (6000 random strings per range)', async () => {
    const { api } = await xgrammarRuntime();
    const chars = ['-', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ''];
    const info = await api.TokenizerInfo.createTokenizerInfo(chars, 'raw', false, chars.length, [12]);
    const compiler = await api.GrammarCompiler.createGrammarCompiler(info, false);
    const random = seeded(11);
    for (const b of BOUNDS) {
      const compiled = await compiler.compileGrammar(`root ::= n_0\n${numberRangeRules(b, 'n')}`);
      const m = await api.GrammarMatcher.createGrammarMatcher(compiled);
      const digits = b.integer ? 0 : b.minimum === 1e-7 ? 7 : 6;
      const wrong: string[] = [];
      for (let i = 0; i < 6000; i++) {
        let s = random() < 0.3 ? '-' : '';
        const intDigits = 1 + Math.floor(random() * 4);
        for (let j = 0; j < intDigits; j++) s += String(Math.floor(random() * (j === 0 && random() < 0.5 ? 3 : 10)));
        if (random() < 0.6) {
          s += '.';
          const f = 1 + Math.floor(random() * 8);
          for (let j = 0; j < f; j++) s += String(Math.floor(random() * 10));
        }
        m.reset();
        let ok = [...s].every((ch) => m.acceptToken(chars.indexOf(ch)));
        if (ok) ok = m.acceptToken(12);
        if (ok !== expected(b, s, digits)) wrong.push(`${s} ${ok ? 'accepted' : 'rejected'}`);
      }
      expect(wrong, JSON.stringify(b)).toEqual([]);
    }
  });

  it('count decoded characters and never allow raw control characters', async () => {
    const { api } = await xgrammarRuntime();
    const g = await api.Grammar.fromEBNF(`root ::= s\n${stringLengthRules(2, 5, 's')}`);
    const accepts = (s: string) => api.Testings.isGrammarAcceptString(g, s);
    expect(await accepts('"ab"')).toBe(true);
    expect(await accepts('"abcde"')).toBe(true);
    expect(await accepts('"a\\nb"')).toBe(true);
    expect(await accepts('"\\u00e9\\u00e9"')).toBe(true);
    expect(await accepts('"a"')).toBe(false);
    expect(await accepts('"abcdef"')).toBe(false);
    expect(await accepts('"a\u0011b"')).toBe(false);
    expect(await accepts('"\\ud83d\\ude00"')).toBe(false);
  });
});
