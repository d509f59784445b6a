/**
 * Grammar specs compiled for one model's vocabulary, cached by source (LRU per vocabulary).
 *
 * Every spec becomes EBNF text we have checked before xgrammar compiles it: json_object and json_schema
 * through json-schema.ts and xgrammar's schema converter (one line, ", " and ": " separators: no
 * whitespace for a weak model to wander in), our own number grammar spliced in; EBNF through
 * ebnf-check.ts; tools through tool-grammar.ts. Compiling also checks that the vocabulary can write
 * what the grammar forces at the start (see checkWritable).
 */
import type { GrammarTokenizer as Tokenizer } from './token-table.ts';
import { GrammarConstraint, type ConstraintOptions } from './constraint.ts';
import { checkEbnf } from './ebnf-check.ts';
import { GrammarInputError } from './errors.ts';
import { prepareJsonSchema } from './json-schema.ts';
import { schemaEbnf } from './schema-ebnf.ts';
import { LruCache } from './lru.ts';
import { checkSpecLimits } from './spec-limits.ts';
import type { GrammarSpec } from './spec.ts';
import { TOOL_CALL_OPEN } from './tool-format.ts';
import { toolCallStructure } from './tool-grammar.ts';
import { grammarVocabulary, vocabularyCoverage, type GrammarVocabulary } from './vocabulary.ts';
import type { XGrammarApi } from './xgrammar.ts';

type XgCompiledGrammar = InstanceType<XGrammarApi['CompiledGrammar']>;

/** Compiled grammars kept per vocabulary (LRU). A small schema on a 32000-token vocabulary holds about 0.4 MB of wasm memory, which the wasm heap keeps once grown. */
export const GRAMMAR_CACHE_ENTRIES = 64;

const compiledFree = new FinalizationRegistry<XgCompiledGrammar>((g) => {
  try {
    g.dispose();
  } catch {
    // already deleted
  }
});

export class CompiledGrammar {
  private ms = 0;

  private constructor(
    readonly vocabulary: GrammarVocabulary,
    readonly kind: GrammarSpec['type'],
    private readonly compiled: XgCompiledGrammar,
    /** Keywords dropped or approximated (non-strict schemas). */
    readonly warnings: readonly string[],
    /** The EBNF xgrammar compiled (for debugging; the tool grammar is a structural tag instead). */
    readonly ebnf: string | undefined,
  ) {
    compiledFree.register(this, compiled);
  }

  static async build(vocabulary: GrammarVocabulary, spec: GrammarSpec): Promise<CompiledGrammar> {
    const t0 = performance.now();
    const warnings: string[] = [];
    const rt = vocabulary.runtime;
    const param = paramOf(spec);
    const onAbort = (m: string) => new GrammarInputError(`${param}: xgrammar could not compile it: ${m}`, param);
    let compiled: XgCompiledGrammar;
    let ebnf: string | undefined;
    if (spec.type === 'tools') {
      const structure = await toolCallStructure(rt, spec, warnings);
      compiled = await rt.run(() => vocabulary.compiler.compileStructuralTag(structure), onAbort, warnings);
    } else {
      if (spec.type === 'ebnf') {
        ebnf = spec.grammar;
        checkEbnf(ebnf, spec.root ?? 'root', param);
      } else {
        const schema = spec.type === 'json_object' ? { type: 'object' } : spec.schema;
        const prepared = prepareJsonSchema(schema, { strict: spec.type === 'json_schema' && spec.strict === true, param });
        warnings.push(...prepared.warnings);
        ebnf = await schemaEbnf(rt, prepared, param);
      }
      const source = ebnf;
      compiled = await rt.run(() => vocabulary.compiler.compileGrammar(source, spec.type === 'ebnf' ? (spec.root ?? 'root') : 'root'), onAbort, warnings);
    }
    const grammar = new CompiledGrammar(vocabulary, spec.type, compiled, warnings, ebnf);
    await grammar.checkWritable(param, spec.type === 'tools' && spec.choice === 'auto' ? TOOL_CALL_OPEN : undefined);
    grammar.ms = performance.now() - t0;
    return grammar;
  }

  /** Milliseconds it took to compile (conversion, xgrammar, the writability check). */
  get compileMs(): number {
    return this.ms;
  }

  /** A fresh constraint (one per generation); pass the generation's maxTokens to get complete output. */
  createConstraint(opts: ConstraintOptions = {}): Promise<GrammarConstraint> {
    return GrammarConstraint.create(this.vocabulary, this.compiled, opts);
  }

  /**
   * Refuse a grammar this vocabulary cannot write (TinyStories-656K has no "{" token, say): from the
   * start, and for tool calls under `auto` from the `<tool_call>` trigger, follow the text the grammar
   * forces until the first real choice; a dead end on that path is an error now, not an incomplete
   * generation later. Dead ends beyond the first choice are caught per generation (constraint.deadEnd).
   */
  private async checkWritable(param: string, probe?: string): Promise<void> {
    for (const start of probe === undefined ? [''] : ['', probe]) {
      const c = await this.createConstraint();
      try {
        if (start && !this.feed(c, start)) continue; // cannot even write the trigger: no call will start
        this.followForced(c, param, start);
      } finally {
        c.dispose();
      }
    }
  }

  /** Accept `text` token by token (longest match); false if the vocabulary or grammar does not allow it. */
  private feed(c: GrammarConstraint, text: string): boolean {
    const bytes = new TextEncoder().encode(text);
    for (let at = 0; at < bytes.length; ) {
      const id = this.vocabulary.longestTokenAt(bytes, at);
      const m = c.mask();
      if (id < 0 || !(m[id >>> 5] & (1 << (id & 31)))) return false;
      c.accept(id);
      at += this.vocabulary.tokenizer.tokenBytes(id).length;
    }
    return true;
  }

  private followForced(c: GrammarConstraint, param: string, written: string): void {
    let text = written;
    for (let step = 0; step < 64; step++) {
      c.mask();
      if (c.deadEnd !== undefined) {
        const needed = c.forcedText();
        const cov = vocabularyCoverage(this.vocabulary.tokenizer);
        const missing = [...new Set(needed)].filter((ch) => !cov.has(ch));
        const where = text ? `after ${JSON.stringify(text)}` : 'at the start';
        const must = needed ? `; the grammar requires ${JSON.stringify(needed)} ${where}` : '';
        const lacks = missing.length > 0 ? ` and no token of this model contains ${missing.map((ch) => JSON.stringify(ch)).join(', ')}` : '';
        throw new GrammarInputError(`${param}: this model's vocabulary cannot write what the grammar requires${must}${lacks}`, param);
      }
      if (c.complete) return;
      const forced = c.forcedTokens(64);
      if (forced.length === 0) return;
      for (const t of forced) {
        c.accept(t);
        text += new TextDecoder().decode(this.vocabulary.tokenizer.tokenBytes(t));
      }
    }
  }
}

export function paramOf(spec: GrammarSpec): string {
  switch (spec.type) {
    case 'json_object':
      return 'response_format';
    case 'json_schema':
      return 'schema';
    case 'ebnf':
      return 'grammar';
    case 'tools':
      return 'tools';
  }
}

const caches = new WeakMap<GrammarVocabulary, LruCache<string, Promise<CompiledGrammar>>>();

/**
 * The spec's shape and static limits, checked before anything recursive (the cache key, the schema
 * walk, cloning to a worker) sees it.
 */
export function checkSpec(spec: GrammarSpec): void {
  if (!spec || typeof spec !== 'object' || !('type' in spec)) throw new GrammarInputError('the grammar spec must be an object with a type', 'grammar');
  checkSpecLimits(spec, paramOf(spec));
}

export function cacheKey(spec: GrammarSpec): string {
  switch (spec.type) {
    case 'json_object':
      return 'json_object';
    case 'json_schema':
      return `json_schema|${spec.strict === true}|${typeof spec.schema === 'string' ? spec.schema : JSON.stringify(spec.schema)}`;
    case 'ebnf':
      return `ebnf|${spec.root ?? 'root'}|${spec.grammar}`;
    case 'tools':
      return `tools|${JSON.stringify(spec.choice)}|${spec.parallel !== false}|${JSON.stringify(spec.tools)}`;
  }
}

/**
 * The spec compiled for this tokenizer's vocabulary, from the cache when the same spec was compiled
 * before. Throws GrammarInputError (the caller's fault: a 400) for invalid, unsupported or, for this
 * vocabulary, impossible grammars; the message says what and where.
 */
export async function compileGrammar(tokenizer: Tokenizer, spec: GrammarSpec): Promise<CompiledGrammar> {
  checkSpec(spec);
  const vocabulary = await grammarVocabulary(tokenizer);
  let cache = caches.get(vocabulary);
  if (!cache) {
    cache = new LruCache(GRAMMAR_CACHE_ENTRIES);
    caches.set(vocabulary, cache);
  }
  const key = cacheKey(spec);
  let entry = cache.get(key);
  if (!entry) {
    entry = CompiledGrammar.build(vocabulary, spec);
    cache.set(key, entry);
    const built = entry;
    const c = cache;
    // Remember input errors (asking again gives the same answer); forget anything else.
    built.catch((e) => {
      if (!(e instanceof GrammarInputError) || vocabulary.runtime.tainted) c.delete(key);
    });
  }
  return entry;
}

/** compileGrammar, then a constraint for one generation. */
export async function createGrammarConstraint(tokenizer: Tokenizer, spec: GrammarSpec, opts: ConstraintOptions = {}): Promise<GrammarConstraint> {
  return (await compileGrammar(tokenizer, spec)).createConstraint(opts);
}
