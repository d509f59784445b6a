/** Hostile JSON schemas in response_format (both forms, object and text) and extract's `schema`. */
import { CHAT, chatBody, inferBody, INFER, nestedSchemaText, post, RAW, req, splice, type Case, type GenContext, type Generator, type Rng } from '../cases.ts';

type Schema = Record<string, unknown>;

/**
 * Puts a schema where a client may send one: json_schema, llama.cpp's json_object + schema (object or
 * text), or extract. `schema` may be JSON text to splice in as is (for nesting JSON.stringify cannot do).
 */
function place(g: GenContext, name: string, schema: unknown, expect: (number | string)[], rawText?: string): Case {
  const { rng, keys } = g;
  if (rawText !== undefined) {
    const where = rng.int(0, 2);
    const body =
      where === 0
        ? splice(chatBody({ response_format: { type: 'json_schema', json_schema: { name: 'deep', schema: RAW } } }), rawText)
        : where === 1
          ? JSON.stringify(chatBody({ response_format: { type: 'json_object', schema: rawText } }))
          : splice(inferBody('extract', { schema: RAW }), rawText);
    return req('schema', `schema/${name}${where === 2 ? '-extract' : where === 1 ? '-as-text' : ''}`, post(where === 2 ? INFER : CHAT, body, keys.main), expect);
  }
  const where = rng.int(0, 3);
  const strict = rng.pick([true, false, undefined, null]);
  if (where === 0 || where === 3) {
    const json_schema: Record<string, unknown> = { name: rng.pick(['out', 'x', 'a'.repeat(64), 'bad name!', '']), schema };
    if (strict !== undefined) json_schema.strict = strict;
    return req('schema', `schema/${name}`, post(CHAT, chatBody({ response_format: { type: 'json_schema', json_schema } }), keys.main), where === 3 ? [...expect, 400] : expect);
  }
  if (where === 1) {
    const s = rng.bool(0.5) ? JSON.stringify(schema) : schema;
    return req('schema', `schema/${name}`, post(CHAT, chatBody({ response_format: { type: 'json_object', schema: s } }), keys.main), expect);
  }
  // extract writes its schema into the prompt: a big one would cost a long prefill, so big ones go to json_schema.
  if (JSON.stringify(schema ?? null).length > 2000) return req('schema', `schema/${name}`, post(CHAT, chatBody({ response_format: { type: 'json_schema', json_schema: { name: 'out', schema } } }), keys.main), expect);
  return req('schema', `schema/${name}-extract`, post(INFER, inferBody('extract', { schema }), keys.main), expect);
}

const deep: Generator = (g) => {
  const depth = g.rng.logInt(10, 5000);
  // Past 64 levels of the whole body (or of the text) this is json_too_deep; below, a real (if silly) grammar.
  return place(g, 'deep-nesting', null, depth < 32 ? [200, 400] : [400], nestedSchemaText(depth, g.rng.pick(['{"type":"string","maxLength":3}', '{"type":"integer"}', '{}'])));
};

const TYPES = ['string', 'integer', 'number', 'boolean', 'null', 'array', 'object'];

const manyProps: Generator = (g) => {
  const n = g.rng.logInt(100, 2000);
  const properties: Schema = {};
  for (let i = 0; i < n; i++) properties[`p${i}`] = { type: g.rng.pick(TYPES) };
  const schema: Schema = { type: 'object', properties };
  if (g.rng.bool()) schema.required = Object.keys(properties);
  return place(g, 'many-properties', schema, [200, 400]);
};

const bigEnum: Generator = (g) => {
  const n = g.rng.logInt(100, 20000);
  const values = Array.from({ length: n }, (_, i) => (g.rng.bool(0.8) ? `${g.rng.word()}${i}` : g.rng.pick([i, i + 0.5, null, true, { k: i }, [i]])));
  return place(g, 'big-enum', { type: 'object', properties: { e: { enum: values } }, required: ['e'] }, [200, 400]);
};

const boundedStrings: Generator = (g) => {
  const n = g.rng.logInt(5, 500);
  const properties: Schema = {};
  for (let i = 0; i < n; i++) {
    const lo = g.rng.pick([0, 1, g.rng.int(0, 50), g.rng.logInt(1, 1e9), -1, 1.5]);
    const hi = g.rng.pick([lo, g.rng.int(0, 50), g.rng.logInt(1, 1e9), 2 ** 53, lo - 1]);
    properties[`s${i}`] = { type: 'string', minLength: lo, maxLength: hi };
  }
  return place(g, 'bounded-strings', { type: 'object', properties, required: Object.keys(properties) }, [200, 400]);
};

const NUMS = [1e300, -1e300, 1e-300, -1e-300, 0.1234567890123456, 5e-324, 1.7976931348623157e308, -0, 0, 2 ** 53 + 1, -(2 ** 63), 1e21, 123456789.987654321];

const numericBounds: Generator = (g) => {
  const s: Schema = { type: g.rng.pick(['integer', 'number']) };
  for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']) if (g.rng.bool(0.6)) s[k] = g.rng.pick(NUMS);
  return place(g, 'numeric-bounds', { type: 'object', properties: { n: s }, required: ['n'] }, [200, 400]);
};

const PATTERNS = [
  '((a|b){1,200}c){1,200}',
  '[a-z]{1,5000}',
  '(a{1,100}){1,100}',
  '(((a*)*)*)*b',
  '(a|aa)+$',
  '^(\\d{1,3}\\.){3}\\d{1,3}$',
  'x{99999999}',
  '[',
  '(?<=a)b',
  '\\p{L}+',
  '(a)\\1',
  '.{0,100000}',
  '(?:(?:(?:(?:(?:(?:(?:(?:(?:(?:a{1,9}){1,9}){1,9}){1,9}){1,9}){1,9}){1,9}){1,9}){1,9}){1,9})',
  '[\\u0000-\\uffff]{1,50}',
  'a{5,1}',
  '',
];

const patterns: Generator = (g) => {
  const pattern = g.rng.pick(PATTERNS);
  return place(g, 'patterns', { type: 'object', properties: { p: { type: 'string', pattern } }, required: ['p'] }, [200, 400]);
};

const REFS: Schema[] = [
  { $defs: { n: { type: 'object', properties: { next: { $ref: '#/$defs/n' } } } }, $ref: '#/$defs/n' },
  { type: 'object', properties: { a: { $ref: '#' } }, required: ['a'] },
  { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' },
  { $ref: '#' },
  { type: 'object', properties: { x: { $ref: '#/$defs/missing' } }, required: ['x'] },
  { type: 'object', properties: { x: { $ref: 'http://example.com/schema.json' } } },
  { type: 'object', properties: { x: { $ref: '#/properties/x' } }, required: ['x'] },
  { type: 'object', properties: { x: { $ref: '#/definitions/../../etc' } } },
  { type: 'object', properties: { x: { $ref: '#/$defs/a~1b' } }, $defs: { 'a/b': { type: 'string' } } },
  { type: 'object', properties: { x: { $ref: '' } } },
];

const refs: Generator = (g) => place(g, 'refs', g.rng.pick(REFS), [200, 400]);

const UNSUPPORTED: Schema[] = [
  { type: 'array', uniqueItems: true },
  { type: 'integer', multipleOf: 3 },
  { not: { type: 'string' } },
  { if: { type: 'string' }, then: { minLength: 2 } },
  { type: 'object', patternProperties: { '^a': { type: 'string' } } },
  { type: 'object', frobnicate: 12 },
  { type: 'object', dependentRequired: { a: ['b'] } },
  { type: 'string', contentEncoding: 'base64' },
  { type: 'array', contains: { type: 'string' } },
  { type: 'object', propertyNames: { pattern: '^a' } },
];

const unknownKeywords: Generator = (g) => place(g, 'unsupported-keywords', { type: 'object', properties: { u: g.rng.pick(UNSUPPORTED) }, required: ['u'] }, [400]);

const KEYWORDS = ['type', 'properties', 'required', 'enum', 'const', 'minLength', 'maxLength', 'pattern', 'items', 'prefixItems', 'anyOf', 'oneOf', 'allOf', '$ref', '$defs', 'additionalProperties', 'minItems', 'maxItems', 'minimum', 'maximum', 'format'];
const WRONG = [5, -1, 1.5, 'x', '', true, null, [], [1, 'a'], {}, { a: 1 }, 1e308];

const wrongTypes: Generator = (g) => {
  const s: Schema = { type: 'object', properties: { a: { type: 'string' } } };
  const n = g.rng.int(1, 3);
  for (let i = 0; i < n; i++) s[g.rng.pick(KEYWORDS)] = g.rng.pick(WRONG);
  return place(g, 'wrong-keyword-types', s, [200, 400]);
};

const notObjects: Generator = (g) => {
  const schema = g.rng.pick([true, false, null, 0, 'string', [], [{ type: 'object' }], { type: 'strnig' }, { type: ['string', 'nope'] }, { type: [] }]);
  return place(g, 'not-a-schema', schema, [200, 400]);
};

const schemaText: Generator = (g) => {
  const text = g.rng.pick(['{"type":', '{"type":"object"', 'not json at all', '', ' ', '{"type":"object"}}', '[1,2', '"{\\"type\\":\\"object\\"}"', '{"type":"object","properties":{"a":{"type":"string"}}}', 'null', '{}', '\u0000', '{"a":' + '['.repeat(70)]);
  return req('schema', 'schema/schema-as-text', post(CHAT, chatBody({ response_format: { type: 'json_object', schema: text } }), g.keys.main), [200, 400]);
};

const formatShapes: Generator = (g) => {
  const rf = g.rng.pick<unknown>([
    { type: 'json_schema' },
    { type: 'json_schema', json_schema: 'x' },
    { type: 'json_schema', json_schema: { name: 'a' } },
    { type: 'json_schema', json_schema: { name: 'a', schema: null } },
    { type: 'yaml' },
    { type: null },
    'json_object',
    [],
    { type: 'json_object', schema: 42 },
    { type: 'text', schema: { type: 'object' } },
    { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' }, strict: 'yes' } },
  ]);
  return req('schema', 'schema/response-format-shapes', post(CHAT, chatBody({ response_format: rf }), g.keys.main), [200, 400]);
};

/** Valid but big and many-branched: the grammar is real work, bounded by the compile budget. */
const combinators: Generator = (g) => {
  const branches = (r: Rng, n: number): Schema[] => Array.from({ length: n }, (_, i) => ({ type: 'object', properties: { [`k${i}`]: { type: r.pick(TYPES) } }, required: [`k${i}`] }));
  const n = g.rng.logInt(2, 400);
  const s = g.rng.pick([{ anyOf: branches(g.rng, n) }, { oneOf: branches(g.rng, n) }, { allOf: branches(g.rng, Math.min(n, 40)) }]);
  return place(g, 'combinators', s, [200, 400]);
};

export const schemaGenerators: [Generator, number][] = [
  [deep, 4],
  [manyProps, 2],
  [bigEnum, 2],
  [boundedStrings, 2],
  [numericBounds, 2],
  [patterns, 3],
  [refs, 2],
  [unknownKeywords, 2],
  [wrongTypes, 3],
  [notObjects, 1],
  [schemaText, 2],
  [formatShapes, 1],
  [combinators, 2],
];
