/**
 * JSON Schema, checked and rewritten before xgrammar sees it.
 *
 * xgrammar aborts its wasm instance on malformed schemas, silently ignores keywords it cannot enforce
 * (`not`, `uniqueItems`, `multipleOf`, ...), and writes wrong grammars for numeric bounds. So every schema
 * goes through here: each keyword's value is type-checked (an error names the JSON pointer and what was
 * wrong); keywords the grammar cannot enforce are an error under `strict` and dropped with a warning
 * otherwise (the output may then fail validation on exactly those keywords); numeric bounds and string
 * lengths are replaced by markers that schema-ebnf.ts swaps for our own grammars (number-range.ts,
 * string-length.ts), which xgrammar 0.1.27 gets wrong.
 *
 * Normalisation that only narrows what is generated (every output still validates against the original):
 * an object that lists `properties` and says nothing about others gets `additionalProperties: false`, so
 * the model never invents keys; names in `required` but not in `properties` are added as "any value".
 */
import { GrammarInputError } from './errors.ts';
import { numberRangeRules, unboundedNumberRules, type NumberBounds } from './number-range.ts';
import { unsupportedPattern } from './regex-check.ts';
import { MAX_CHAIN, stringLengthRules } from './string-length.ts';

export interface JsonSchemaOptions {
  /** Refuse keywords the grammar cannot enforce instead of dropping them. */
  strict: boolean;
  /** Where the schema sits in the request, for error messages (default `schema`). */
  param?: string;
}

export interface PreparedSchema {
  /** The schema to hand to xgrammar. */
  schema: unknown;
  /** EBNF to splice in for each marker (a const string in `schema`): the rule to use and its rules. */
  splices: Map<string, { rule: string; rules: string }>;
  /** Keywords dropped (non-strict) or approximated, one line each. */
  warnings: string[];
}

/** Keywords that describe and never constrain. */
const ANNOTATIONS = new Set([
  'title', 'description', 'default', 'examples', '$schema', '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly',
  'contentEncoding', 'contentMediaType', 'discriminator', 'x-order',
]);

/** Keywords the grammar cannot enforce. */
const UNSUPPORTED = new Set([
  'not', 'if', 'then', 'else', 'dependentRequired', 'dependentSchemas', 'dependencies', 'contains', 'minContains',
  'maxContains', 'uniqueItems', 'multipleOf', 'unevaluatedItems', 'patternProperties', 'propertyNames', 'minProperties',
  'maxProperties', '$anchor', '$dynamicRef', '$dynamicAnchor', '$recursiveRef', '$recursiveAnchor', 'contentSchema',
]);

/**
 * What a caller whose schema is always compiled strictly (the HTTP API) can actually do instead; "leave
 * out strict" does not help there.
 */
const STRICT_ADVICE: Readonly<Record<string, string>> = {
  uniqueItems: 'remove "uniqueItems" from the schema and drop repeated items from the answer yourself',
};

/** String formats xgrammar writes a grammar for; others are only annotations to it. */
const FORMATS = new Set(['email', 'date', 'time', 'date-time', 'duration', 'ipv4', 'ipv6', 'hostname', 'uuid', 'uri', 'uri-reference', 'json-pointer']);

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);
const MAX_NODES = 10_000;

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

class Preparer {
  readonly splices = new Map<string, { rule: string; rules: string }>();
  private readonly bySignature = new Map<string, string>();
  readonly warnings: string[] = [];
  private nodes = 0;

  constructor(
    private readonly root: unknown,
    private readonly strict: boolean,
    private readonly param: string,
  ) {}

  fail(path: string, what: string): never {
    throw new GrammarInputError(`${this.param}${path ? ` at ${path}` : ''}: ${what}`, this.param);
  }

  /** A keyword we cannot enforce: an error under strict, else dropped with a warning. */
  unenforced(path: string, key: string, why: string): void {
    if (this.strict) this.fail(`${path}/${key}`, `${why}; it cannot be enforced by the grammar (${STRICT_ADVICE[key] ?? 'leave out strict to drop it'})`);
    this.warnings.push(`${this.param} at ${path}/${key}: ${why}; dropped, so the output may not satisfy it`);
  }

  schema(s: unknown, path: string): unknown {
    if (++this.nodes > MAX_NODES) this.fail(path, `more than ${MAX_NODES} subschemas`);
    if (s === true) return {};
    if (s === false) this.fail(path, 'is `false`, which no value satisfies');
    if (!isObj(s)) this.fail(path, `must be an object or a boolean (got ${describe(s)})`);
    const out: Obj = {};
    for (const [key, value] of Object.entries(s)) this.keyword(s, key, value, path, out);
    return this.finish(s, out, path);
  }

  private keyword(s: Obj, key: string, v: unknown, path: string, out: Obj): void {
    const at = `${path}/${key}`;
    if (ANNOTATIONS.has(key) || key.startsWith('x-')) return;
    if (UNSUPPORTED.has(key)) return this.unenforced(path, key, `keyword "${key}" is not supported`);
    switch (key) {
      case 'type': {
        const types = typeof v === 'string' ? [v] : v;
        if (!Array.isArray(types) || types.length === 0 || types.some((t) => typeof t !== 'string' || !TYPES.has(t))) {
          this.fail(at, `must be one of ${[...TYPES].join(', ')} or a non-empty array of them (got ${describe(v)})`);
        }
        if (new Set(types).size !== types.length) this.fail(at, 'lists a type twice');
        out.type = v;
        return;
      }
      case 'nullable':
        if (typeof v !== 'boolean') this.fail(at, `must be a boolean (got ${describe(v)})`);
        out.nullable = v;
        return;
      case 'enum':
        if (!Array.isArray(v) || v.length === 0) this.fail(at, `must be a non-empty array (got ${describe(v)})`);
        out.enum = v;
        return;
      case 'const':
        out.const = v;
        return;
      case 'properties': {
        if (!isObj(v)) this.fail(at, `must be an object of schemas (got ${describe(v)})`);
        const props: Obj = {};
        for (const [name, sub] of Object.entries(v)) {
          // A property whose schema is `false` may not appear: leave it out of what we generate.
          if (sub === false) continue;
          props[name] = this.schema(sub, `${at}/${escapePointer(name)}`);
        }
        out.properties = props;
        return;
      }
      case 'required':
        if (!Array.isArray(v) || v.some((n) => typeof n !== 'string')) this.fail(at, `must be an array of property names (got ${describe(v)})`);
        if (new Set(v).size !== v.length) this.fail(at, 'lists a property twice');
        out.required = v;
        return;
      case 'additionalProperties':
        out.additionalProperties = v === false ? false : this.schema(v, at);
        return;
      case 'items':
        if (Array.isArray(v)) {
          // Draft 4-7 tuple form: the same as prefixItems (with additionalItems for the rest).
          out.prefixItems = v.map((sub, i) => this.schema(sub, `${at}/${i}`));
          if (s.additionalItems !== undefined) out.items = s.additionalItems === false ? false : this.schema(s.additionalItems, `${path}/additionalItems`);
          return;
        }
        out.items = v === false ? false : this.schema(v, at);
        return;
      case 'additionalItems':
        return; // taken with array-form items; meaningless otherwise
      case 'prefixItems':
        if (!Array.isArray(v)) this.fail(at, `must be an array of schemas (got ${describe(v)})`);
        out.prefixItems = v.map((sub, i) => this.schema(sub, `${at}/${i}`));
        return;
      case 'minItems':
      case 'maxItems':
      case 'minLength':
      case 'maxLength':
        if (!isCount(v)) this.fail(at, `must be a non-negative integer (got ${describe(v)})`);
        out[key] = v;
        return;
      case 'pattern': {
        if (typeof v !== 'string') this.fail(at, `must be a string (got ${describe(v)})`);
        const why = unsupportedPattern(v);
        if (why) return this.unenforced(path, key, `pattern ${JSON.stringify(v)} ${why}`);
        out.pattern = v;
        return;
      }
      case 'format':
        if (typeof v !== 'string') this.fail(at, `must be a string (got ${describe(v)})`);
        if (!FORMATS.has(v)) return this.unenforced(path, key, `format "${v}" is not one the grammar knows (${[...FORMATS].join(', ')})`);
        out.format = v;
        return;
      case 'minimum':
      case 'maximum':
        if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(at, `must be a number (got ${describe(v)})`);
        out[key] = v;
        return;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum': {
        // Draft 4 wrote these as booleans modifying minimum/maximum.
        if (typeof v === 'boolean') {
          const base = key === 'exclusiveMinimum' ? 'minimum' : 'maximum';
          if (v && typeof s[base] === 'number') out[`_draft4_${key}`] = true;
          return;
        }
        if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(at, `must be a number (got ${describe(v)})`);
        out[key] = v;
        return;
      }
      case 'anyOf':
      case 'oneOf':
        if (!Array.isArray(v) || v.length === 0) this.fail(at, `must be a non-empty array of schemas (got ${describe(v)})`);
        // oneOf becomes anyOf: the grammar cannot exclude values matching two branches.
        if (key === 'oneOf') this.warnings.push(`${this.param} at ${at}: oneOf is generated as anyOf (a value matching two branches is not excluded)`);
        out.anyOf = [...((out.anyOf as unknown[]) ?? []), ...v.map((sub, i) => this.schema(sub, `${at}/${i}`))];
        return;
      case 'allOf':
        if (!Array.isArray(v) || v.length === 0) this.fail(at, `must be a non-empty array of schemas (got ${describe(v)})`);
        out.allOf = v.map((sub, i) => this.schema(sub, `${at}/${i}`));
        return;
      case '$ref':
        if (typeof v !== 'string') this.fail(at, `must be a string (got ${describe(v)})`);
        this.checkRef(v, at);
        out.$ref = v;
        return;
      case '$defs':
      case 'definitions':
        if (path !== '') return this.unenforced(path, key, `"${key}" is only supported at the top of the schema`);
        if (!isObj(v)) this.fail(at, `must be an object of schemas (got ${describe(v)})`);
        out[key] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, this.schema(sub, `${at}/${escapePointer(name)}`)]));
        return;
      default:
        if (this.strict) this.fail(at, `unknown keyword "${key}" (leave out strict to ignore unknown keywords)`);
        this.warnings.push(`${this.param} at ${at}: unknown keyword "${key}" ignored`);
    }
  }

  private checkRef(ref: string, at: string): void {
    if (ref !== '#' && !ref.startsWith('#/')) this.fail(at, `only references inside the schema ("#/...") are supported (got ${JSON.stringify(ref)})`);
    const parts = ref === '#' ? [] : ref.slice(2).split('/').map(unescapePointer);
    if (parts.length > 0 && parts[0] !== '$defs' && parts[0] !== 'definitions') {
      this.fail(at, `references must point into $defs or definitions (got ${JSON.stringify(ref)})`);
    }
    let node: unknown = this.root;
    for (const p of parts) {
      if (!isObj(node) || !(p in node)) this.fail(at, `reference ${JSON.stringify(ref)} points to nothing`);
      node = node[p];
    }
  }

  /** Cross-keyword checks and normalisation of one subschema. */
  private finish(src: Obj, out: Obj, path: string): unknown {
    for (const [lo, hi] of [['minItems', 'maxItems'], ['minLength', 'maxLength']] as const) {
      if (isCount(out[lo]) && isCount(out[hi]) && (out[lo] as number) > (out[hi] as number)) this.fail(`${path}/${lo}`, `${lo} ${out[lo]} is greater than ${hi} ${out[hi]}`);
    }
    if (out.nullable === true) {
      if (typeof out.type === 'string') out.type = [out.type, 'null'];
      else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
    }
    delete out.nullable;
    if (out.allOf) this.mergeAllOf(out, path);
    if (out.$ref !== undefined) {
      const siblings = Object.keys(out).filter((k) => k !== '$ref' && k !== '$defs' && k !== 'definitions');
      if (siblings.length > 0) {
        if (this.strict) this.fail(path, `"$ref" beside other keywords (${siblings.join(', ')}) is not supported`);
        this.warnings.push(`${this.param} at ${path}: keywords beside "$ref" (${siblings.join(', ')}) dropped`);
        for (const k of siblings) delete out[k];
      }
      return out;
    }
    const props = out.properties as Obj | undefined;
    if (props || out.required) {
      if (out.type === undefined) out.type = 'object';
      const properties: Obj = { ...(props ?? {}) };
      for (const name of (out.required as string[] | undefined) ?? []) {
        if (!(name in properties)) {
          if (src.properties !== undefined && isObj(src.properties) && src.properties[name] === false) this.fail(`${path}/required`, `"${name}" is required but its schema is false`);
          if (out.additionalProperties === false) this.fail(`${path}/required`, `"${name}" is required but not allowed (not in properties, additionalProperties false)`);
          properties[name] = isObj(out.additionalProperties) ? out.additionalProperties : {};
        }
      }
      out.properties = properties;
      if (out.additionalProperties === undefined) out.additionalProperties = false;
    }
    return this.stringLength(this.numberBounds(out, path) as Obj, path);
  }

  /** A string with minLength/maxLength becomes a marker for our own string grammar (string-length.ts). */
  private stringLength(out: Obj, path: string): unknown {
    if (out.minLength === undefined && out.maxLength === undefined) return out;
    const types = out.type === undefined ? ['string'] : typeof out.type === 'string' ? [out.type] : (out.type as string[]);
    const min = (out.minLength as number | undefined) ?? 0;
    const max = out.maxLength as number | undefined;
    delete out.minLength;
    delete out.maxLength;
    if (out.enum !== undefined || out.const !== undefined || !types.includes('string')) return out;
    if (out.pattern !== undefined || out.format !== undefined) {
      this.unenforced(path, 'maxLength', 'minLength/maxLength together with pattern or format are not supported');
      return out;
    }
    if (Math.max(min, max ?? 0) > MAX_CHAIN) {
      this.unenforced(path, max !== undefined && max > MAX_CHAIN ? 'maxLength' : 'minLength', `string lengths above ${MAX_CHAIN} are not supported (the grammar gets too slow)`);
      return out;
    }
    const marker = this.splice(`string ${min} ${max}`, 'string', (rule) => ({ rule, rules: stringLengthRules(min, max, rule) }));
    const others = types.filter((t) => t !== 'string');
    if (others.length === 0 && Object.keys(out).every((k) => k === 'type')) return { const: marker };
    const rest: Obj = { ...out, type: others.length === 1 ? others[0] : others };
    return others.length > 0 ? { anyOf: [{ const: marker }, rest] } : { const: marker };
  }

  /**
   * The marker for one of our grammars; the same bounds share one marker and so one set of rules
   * (a hundred properties with the same bounds compile once, not a hundred times).
   */
  private splice(signature: string, kind: 'string' | 'number', make: (rule: string) => { rule: string; rules: string }): string {
    const known = this.bySignature.get(signature);
    if (known) return known;
    const n = this.splices.size;
    const marker = `__svc_${kind}_${n}__`;
    this.splices.set(marker, make(`svc_${kind}_${n}`));
    this.bySignature.set(signature, marker);
    return marker;
  }

  /** allOf of plain object schemas is merged; anything else cannot be enforced. */
  private mergeAllOf(out: Obj, path: string): void {
    const parts = out.allOf as Obj[];
    delete out.allOf;
    for (const [i, part] of parts.entries()) {
      for (const [k, v] of Object.entries(part)) {
        if (k === 'properties') {
          const mine = (out.properties as Obj | undefined) ?? {};
          for (const [name, sub] of Object.entries(v as Obj)) {
            if (name in mine && JSON.stringify(mine[name]) !== JSON.stringify(sub)) {
              return this.unenforcedAllOf(out, path, `property "${name}" has different schemas in two parts`);
            }
            mine[name] = sub;
          }
          out.properties = mine;
        } else if (k === 'required') {
          out.required = [...new Set([...((out.required as string[]) ?? []), ...(v as string[])])];
        } else if (out[k] === undefined || JSON.stringify(out[k]) === JSON.stringify(v)) {
          out[k] = v;
        } else {
          return this.unenforcedAllOf(out, path, `"${k}" differs between its parts (allOf/${i})`);
        }
      }
    }
  }

  private unenforcedAllOf(out: Obj, path: string, why: string): void {
    this.unenforced(path, 'allOf', `allOf cannot be merged: ${why}`);
  }

  /** Numeric bounds become a marker (a const string) for our own number grammar. */
  private numberBounds(out: Obj, path: string): unknown {
    const keys = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];
    const hasBounds = keys.some((k) => out[k] !== undefined) || out._draft4_exclusiveMinimum || out._draft4_exclusiveMaximum;
    const declared = out.type === undefined ? [] : typeof out.type === 'string' ? [out.type] : (out.type as string[]);
    const isNumeric = (t: string) => t === 'number' || t === 'integer';
    if (!hasBounds && !declared.some(isNumeric)) return out;
    const b: NumberBounds = { integer: false };
    if (out._draft4_exclusiveMinimum) b.exclusiveMinimum = out.minimum as number;
    else if (out.minimum !== undefined) b.minimum = out.minimum as number;
    if (out._draft4_exclusiveMaximum) b.exclusiveMaximum = out.maximum as number;
    else if (out.maximum !== undefined) b.maximum = out.maximum as number;
    if (out.exclusiveMinimum !== undefined) b.exclusiveMinimum = out.exclusiveMinimum as number;
    if (out.exclusiveMaximum !== undefined) b.exclusiveMaximum = out.exclusiveMaximum as number;
    for (const k of [...keys, '_draft4_exclusiveMinimum', '_draft4_exclusiveMaximum']) delete out[k];
    if (out.enum !== undefined || out.const !== undefined) return out; // the listed values decide
    const types = out.type === undefined ? ['number'] : declared;
    const numeric = types.filter(isNumeric);
    if (numeric.length === 0) return out; // bounds apply to numbers only
    b.integer = !numeric.includes('number');
    // Without bounds, xgrammar's number has no limit on digits or exponent: "8.6e970" reads back as
    // Infinity and fails the schema, so unbounded numbers get our grammar too (unboundedNumberRules).
    const marker = this.splice(`number ${JSON.stringify(b)}`, 'number', (rule) => {
      const rules = hasBounds ? numberRangeRules(b, rule) : unboundedNumberRules(b.integer, rule);
      if (rules === undefined) this.fail(path, `no ${b.integer ? 'integer' : 'number'} satisfies its bounds (${describeBounds(b)})`);
      return { rule: `${rule}_0`, rules };
    });
    const others = types.filter((t) => !isNumeric(t));
    if (others.length === 0 && Object.keys(out).every((k) => k === 'type')) return { const: marker };
    const rest: Obj = { ...out, type: others.length === 1 ? others[0] : others };
    if (others.length === 0) delete rest.type;
    return { anyOf: [{ const: marker }, ...(others.length > 0 ? [rest] : [])] };
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'object') return 'an object';
  return String(v);
}

function describeBounds(b: NumberBounds): string {
  const parts: string[] = [];
  if (b.minimum !== undefined) parts.push(`minimum ${b.minimum}`);
  if (b.exclusiveMinimum !== undefined) parts.push(`exclusiveMinimum ${b.exclusiveMinimum}`);
  if (b.maximum !== undefined) parts.push(`maximum ${b.maximum}`);
  if (b.exclusiveMaximum !== undefined) parts.push(`exclusiveMaximum ${b.exclusiveMaximum}`);
  return parts.join(', ');
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const unescapePointer = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');

/**
 * Check and rewrite a schema for xgrammar. Throws GrammarInputError naming the JSON pointer and the
 * problem; keywords that cannot be enforced are errors when `strict`, dropped with a warning otherwise.
 */
export function prepareJsonSchema(schema: unknown, opts: JsonSchemaOptions): PreparedSchema {
  const param = opts.param ?? 'schema';
  if (typeof schema === 'string') {
    try {
      schema = JSON.parse(schema);
    } catch (e) {
      throw new GrammarInputError(`${param} is not valid JSON: ${(e as Error).message}`, param);
    }
  }
  const p = new Preparer(schema, opts.strict, param);
  const out = p.schema(schema, '');
  return { schema: out, splices: p.splices, warnings: p.warnings };
}
