/**
 * Static limits on grammar specs, checked before any compiling: a schema that is cheap to write can be
 * very costly to compile (hundreds of bounded strings, a deep nest, a pattern with `{1000}`), and the
 * time budget of the grammar sandbox should be the last line, not the first. Each refusal names the
 * limit and the JSON pointer where it was passed. The numbers are documented in docs/api.md.
 *
 * The walk is iterative, so no nesting depth can overflow the stack here.
 */
import { GrammarInputError } from './errors.ts';
import type { GrammarSpec } from './spec.ts';

export const SPEC_LIMITS = {
  /** Levels of JSON nesting anywhere in a spec (defaults, examples and const values included). */
  jsonDepth: 128,
  /** Subschemas nested inside one another. */
  depth: 32,
  /** Subschemas in one schema (all tools together). */
  subschemas: 2000,
  /** Object properties, all schemas together. */
  properties: 512,
  /** enum values plus const values, all together. */
  enumValues: 1024,
  /** Characters of all enum and const values written as JSON. */
  enumChars: 65_536,
  /** The larger of minLength / maxLength, summed over distinct pairs (each is also capped at 512, string-length.ts). */
  stringLengthTotal: 4096,
  /** minItems / maxItems, each. */
  items: 256,
  /** Characters in one pattern. */
  patternChars: 512,
  /** A repetition count in a pattern ({n}, {n,m}). */
  patternRepeat: 256,
  /** Magnitude of a numeric bound (beyond this, a bound is as good as none and its grammar is huge). */
  numberMagnitude: 1e15,
  /** $ref occurrences. */
  refs: 256,
  /** Functions in one tool list. */
  tools: 128,
  /** Characters of an EBNF grammar. */
  ebnfChars: 32_768,
} as const;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords whose value is one subschema, an array of them, or a map of names to them. */
const ONE = new Set(['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'additionalItems', 'unevaluatedItems', 'unevaluatedProperties']);
const LIST = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
const MAP = new Set(['properties', '$defs', 'definitions', 'patternProperties', 'dependentSchemas']);
const NUMERIC_BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];

class Counter {
  subschemas = 0;
  properties = 0;
  enumValues = 0;
  enumChars = 0;
  stringLength = 0;
  /** (minLength, maxLength) pairs seen: equal bounds share one grammar, so they count once. */
  readonly lengthPairs = new Set<string>();
  refs = 0;
}

/** Throws GrammarInputError if the spec passes a static limit. */
export function checkSpecLimits(spec: GrammarSpec, param: string): void {
  checkRawDepth(spec, param);
  const count = new Counter();
  if (spec.type === 'json_schema') checkSchema(spec.schema, param, '', count);
  else if (spec.type === 'ebnf') {
    if (typeof spec.grammar === 'string' && spec.grammar.length > SPEC_LIMITS.ebnfChars) {
      throw new GrammarInputError(`${param}: is ${spec.grammar.length} characters long; at most ${SPEC_LIMITS.ebnfChars} are accepted`, param);
    }
  } else if (spec.type === 'tools') {
    if (spec.tools.length > SPEC_LIMITS.tools) throw new GrammarInputError(`${param}: lists ${spec.tools.length} functions; at most ${SPEC_LIMITS.tools} are accepted`, param);
    spec.tools.forEach((t, i) => {
      if (t.parameters !== undefined) checkSchema(t.parameters, `tools[${i}].function.parameters`, '', count);
    });
  }
}

/** Any value nested deeper than jsonDepth would make recursive code (JSON.stringify, cloning) overflow. */
function checkRawDepth(spec: unknown, param: string): void {
  const stack: Array<{ v: unknown; depth: number }> = [{ v: spec, depth: 0 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > SPEC_LIMITS.jsonDepth) throw new GrammarInputError(`${param}: nests JSON more than ${SPEC_LIMITS.jsonDepth} levels deep`, param);
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (typeof child === 'object' && child !== null) stack.push({ v: child, depth: depth + 1 });
  }
}

function checkSchema(root: unknown, param: string, base: string, count: Counter): void {
  if (typeof root === 'string') {
    try {
      root = JSON.parse(root);
    } catch {
      return; // the schema parser reports it
    }
  }
  const fail = (path: string, what: string): never => {
    throw new GrammarInputError(`${param}${path ? ` at ${path}` : ''}: ${what}`, param);
  };
  const stack: Array<{ node: unknown; path: string; depth: number }> = [{ node: root, path: base, depth: 1 }];
  while (stack.length > 0) {
    const { node, path, depth } = stack.pop()!;
    if (!isObj(node)) continue;
    if (depth > SPEC_LIMITS.depth) fail(path, `nests subschemas more than ${SPEC_LIMITS.depth} levels deep`);
    if (++count.subschemas > SPEC_LIMITS.subschemas) fail(path, `has more than ${SPEC_LIMITS.subschemas} subschemas`);
    checkStringLengths(node, path, count, fail);
    for (const [key, value] of Object.entries(node)) {
      const at = `${path}/${escapePointer(key)}`;
      if (ONE.has(key)) {
        if (Array.isArray(value)) value.forEach((v, i) => stack.push({ node: v, path: `${at}/${i}`, depth: depth + 1 }));
        else stack.push({ node: value, path: at, depth: depth + 1 });
      } else if (LIST.has(key) && Array.isArray(value)) {
        value.forEach((v, i) => stack.push({ node: v, path: `${at}/${i}`, depth: depth + 1 }));
      } else if (MAP.has(key) && isObj(value)) {
        const names = Object.keys(value);
        if (key === 'properties' && (count.properties += names.length) > SPEC_LIMITS.properties) {
          fail(at, `brings the number of properties past ${SPEC_LIMITS.properties}`);
        }
        // $defs do not nest what uses them: a definition starts a level below the root, wherever it is.
        const next = key === '$defs' || key === 'definitions' ? 2 : depth + 1;
        for (const n of names) stack.push({ node: value[n], path: `${at}/${escapePointer(n)}`, depth: next });
      } else {
        checkKeyword(key, value, at, count, fail);
      }
    }
  }
}

function checkKeyword(key: string, value: unknown, at: string, count: Counter, fail: (path: string, what: string) => never): void {
  switch (key) {
    case 'enum':
    case 'const': {
      const values = key === 'enum' && Array.isArray(value) ? value : [value];
      if ((count.enumValues += values.length) > SPEC_LIMITS.enumValues) fail(at, `brings the number of enum and const values past ${SPEC_LIMITS.enumValues}`);
      if ((count.enumChars += jsonLength(value)) > SPEC_LIMITS.enumChars) fail(at, `brings the enum and const values past ${SPEC_LIMITS.enumChars} characters`);
      return;
    }
    case 'minItems':
    case 'maxItems':
      if (typeof value === 'number' && value > SPEC_LIMITS.items) fail(at, `is ${value}; at most ${SPEC_LIMITS.items} is supported`);
      return;
    case 'pattern':
      if (typeof value === 'string') checkPattern(value, at, fail);
      return;
    case '$ref':
      if (++count.refs > SPEC_LIMITS.refs) fail(at, `is reference number ${count.refs}; at most ${SPEC_LIMITS.refs} are supported`);
      return;
    default:
      if (NUMERIC_BOUNDS.includes(key) && typeof value === 'number' && Math.abs(value) > SPEC_LIMITS.numberMagnitude) {
        fail(at, `is ${value}; numeric bounds beyond ±${SPEC_LIMITS.numberMagnitude} are not supported (leave the bound out instead)`);
      }
  }
}

/** A string's length bounds cost a chain of rules as long as the larger bound (string-length.ts). */
function checkStringLengths(node: Obj, path: string, count: Counter, fail: (path: string, what: string) => never): void {
  const min = typeof node.minLength === 'number' ? node.minLength : 0;
  const max = typeof node.maxLength === 'number' ? node.maxLength : undefined;
  if (min === 0 && max === undefined) return;
  const pair = `${min}:${max}`;
  if (count.lengthPairs.has(pair)) return;
  count.lengthPairs.add(pair);
  if ((count.stringLength += Math.max(min, max ?? 0)) > SPEC_LIMITS.stringLengthTotal) {
    fail(`${path}/${max !== undefined ? 'maxLength' : 'minLength'}`, `brings the string length bounds past ${SPEC_LIMITS.stringLengthTotal} in all (each distinct minLength/maxLength pair counts its larger bound once)`);
  }
}

function checkPattern(pattern: string, at: string, fail: (path: string, what: string) => never): void {
  if (pattern.length > SPEC_LIMITS.patternChars) fail(at, `is ${pattern.length} characters long; at most ${SPEC_LIMITS.patternChars} are supported`);
  for (const m of pattern.matchAll(/\{(\d+)(?:,(\d*))?\}/g)) {
    const n = Math.max(Number(m[1]), Number(m[2] || 0));
    if (n > SPEC_LIMITS.patternRepeat) fail(at, `repeats ${m[0]}; repetition counts above ${SPEC_LIMITS.patternRepeat} are not supported`);
  }
}

function jsonLength(v: unknown): number {
  try {
    return JSON.stringify(v)?.length ?? 0;
  } catch {
    return Infinity;
  }
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
