/**
 * Zod issues → one 400 that names the parameter the way the provider does (`messages[0].content`) and
 * says what was wrong and what was sent, e.g. "Invalid 'max_tokens': must be at most 4096, got 5000."
 */
import type { z } from 'zod';
import { ApiError, invalidRequest } from '../errors.ts';

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

export function issuesToError(issues: readonly Issue[], input: unknown): ApiError {
  const { issue, path } = pick(issues[0], []);
  const param = paramName(path);
  const value = valueAt(input, path);
  if (issue.code === 'invalid_type' && value === undefined) return invalidRequest(`Missing required parameter: '${param}'.`, param);
  return invalidRequest(`Invalid '${param}': ${reason(issue, value)}.`, param);
}

/** For a union, the branch whose value matched the outer type (it has the useful detail). */
function pick(issue: Issue, base: Path): { issue: Issue; path: Path } {
  const path = [...base, ...issue.path];
  if (issue.code !== 'invalid_union') return { issue, path };
  // A discriminated union whose tag matched no branch: say which tags exist.
  const tags = (issue as { options?: unknown[] }).options;
  if (issue.errors.length === 0 && Array.isArray(tags)) return { issue: { code: 'invalid_value', values: tags, path: [], message: '', input: undefined } as unknown as Issue, path };
  const branches = issue.errors.filter((b) => b.length > 0);
  const matched = branches.find((b) => !(b[0].code === 'invalid_type' && b[0].path.length === 0));
  if (matched) return pick(matched[0], path);
  const expected = branches.map((b) => (b[0].code === 'invalid_type' ? article(b[0].expected) : 'a valid value'));
  return { issue: { code: 'custom', path: [], message: `expected ${expected.join(' or ')}`, input: undefined } as Issue, path };
}

function reason(issue: Issue, value: unknown): string {
  const got = describe(value);
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${article(issue.expected)}, got ${got}`;
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'array') return `must have at most ${max} item${max === 1 ? '' : 's'}, got ${(value as unknown[]).length}`;
      if (issue.origin === 'string') return `must be at most ${max} characters long`;
      return `must be ${issue.inclusive ? 'at most' : 'less than'} ${max}, got ${got}`;
    }
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'array') return min === 1 ? 'must not be empty' : `must have at least ${min} items`;
      if (issue.origin === 'string') return min === 1 ? 'must not be empty' : `must be at least ${min} characters long`;
      return `must be ${issue.inclusive ? 'at least' : 'greater than'} ${min}, got ${got}`;
    }
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, got ${got}`;
    case 'unrecognized_keys':
      return `unknown fields ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
    default:
      return `${issue.message}${value === undefined ? '' : `, got ${got}`}`;
  }
}

export function paramName(path: Path): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || 'body';
}

function valueAt(input: unknown, path: Path): unknown {
  let v = input;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

function article(expected: string): string {
  switch (expected) {
    case 'int':
      return 'an integer';
    case 'array':
    case 'object':
      return `an ${expected}`;
    case 'record':
      return 'an object';
    default:
      return `a ${expected}`;
  }
}

/** What was sent, short enough for an error message (never whole prompts). */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'number':
      return String(value);
    case 'string':
      return value.length <= 40 ? JSON.stringify(value) : 'a string';
    case 'boolean':
      return String(value);
    case 'object':
      return 'an object';
    default:
      return typeof value;
  }
}
