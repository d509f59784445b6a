/**
 * A model's vocabulary as xgrammar sees it, built once per tokenizer (and per xgrammar instance).
 *
 * Vocab type RAW, with each token's decoded bytes (`tokenizer.tokenBytes`): the grammar then matches
 * exactly the bytes our stream decoder emits, for SentencePiece and byte-level BPE alike, with or without
 * byte-fallback tokens, and without xgrammar re-deriving our decoding rules (▁ for space, <0xNN>, GPT-2's
 * byte-to-unicode map). Token strings go to the wasm as Uint8Array, so a lone byte of a multi-byte
 * character (<0xE2>) stays that byte. Control tokens (<s>, <unk>, <|im_start|>...) have no bytes: xgrammar
 * treats empty tokens as special and never allows them, except the end-of-generation tokens, which we
 * pass as stop tokens and which it allows exactly where the grammar may end.
 */
import type { GrammarTokenizer as Tokenizer } from './token-table.ts';
import { GrammarEngineError } from './errors.ts';
import { Utf8Guard } from './utf8-guard.ts';
import { xgrammarRuntime, type XGrammarApi, type XGrammarRuntime } from './xgrammar.ts';

type TokenizerInfo = Awaited<ReturnType<XGrammarApi['TokenizerInfo']['createTokenizerInfo']>>;
type Compiler = Awaited<ReturnType<XGrammarApi['GrammarCompiler']['createGrammarCompiler']>>;

const BYTE_TOKEN = /^<0x[0-9A-Fa-f]{2}>$/;

export class GrammarVocabulary {
  readonly vocabSize: number;
  /** 32-bit words in a token bitmask. */
  readonly maskWords: number;
  readonly stopTokens: readonly number[];
  /** Milliseconds to hand the vocabulary to xgrammar. */
  readonly buildMs: number;
  private byBytes: Map<string, number> | undefined;
  private guard: Utf8Guard | undefined;
  private longestToken = 0;

  private constructor(
    readonly runtime: XGrammarRuntime,
    readonly tokenizer: Tokenizer,
    readonly info: TokenizerInfo,
    /** xgrammar's compiler for this vocabulary. Its own cache is off: compiled grammars are cached in
     *  grammar-cache.ts, and xgrammar's cache never settles an entry whose compilation aborted (a later
     *  request for the same schema spins forever). */
    readonly compiler: Compiler,
    stopTokens: number[],
    buildMs: number,
  ) {
    this.vocabSize = tokenizer.vocabSize;
    this.maskWords = Math.ceil(this.vocabSize / 32);
    this.stopTokens = stopTokens;
    this.buildMs = buildMs;
  }

  static async build(runtime: XGrammarRuntime, tokenizer: Tokenizer): Promise<GrammarVocabulary> {
    const t0 = performance.now();
    const bytes: Uint8Array[] = [];
    const stops: number[] = [];
    for (let id = 0; id < tokenizer.vocabSize; id++) {
      bytes.push(tokenizer.tokenBytes(id));
      if (tokenizer.isEndOfGeneration(id)) stops.push(id);
    }
    if (stops.length === 0) throw new GrammarEngineError('the tokenizer has no end-of-generation token, so a grammar could never let generation end');
    const onAbort = (m: string) => new GrammarEngineError(`xgrammar rejected the vocabulary: ${m}`);
    const { info, compiler } = await runtime.run(async (api) => {
      // The typings say string[]; embind's std::string accepts a Uint8Array as the raw bytes.
      const info = await api.TokenizerInfo.createTokenizerInfo(bytes as unknown as string[], 'raw', false, tokenizer.vocabSize, stops);
      const compiler = await api.GrammarCompiler.createGrammarCompiler(info, false);
      return { info, compiler };
    }, onAbort);
    return new GrammarVocabulary(runtime, tokenizer, info, compiler, stops, performance.now() - t0);
  }

  /** Which tokens would break UTF-8 where (built on first use). */
  utf8Guard(): Utf8Guard {
    this.guard ??= new Utf8Guard(this.tokenizer, this.maskWords);
    return this.guard;
  }

  isStopToken(id: number): boolean {
    return this.stopTokens.includes(id);
  }

  /**
   * The longest token whose bytes start `bytes` (from `at`), preferring a normal token over a byte-fallback
   * token with the same bytes; -1 if none. Used to turn a forced string into tokens.
   */
  longestTokenAt(bytes: Uint8Array, at: number): number {
    const map = this.tokenIndex();
    for (let len = Math.min(this.longestToken, bytes.length - at); len >= 1; len--) {
      const id = map.get(latin1(bytes, at, len));
      if (id !== undefined) return id;
    }
    return -1;
  }

  private tokenIndex(): Map<string, number> {
    if (this.byBytes) return this.byBytes;
    const map = new Map<string, number>();
    const t = this.tokenizer;
    for (let id = 0; id < t.vocabSize; id++) {
      if (t.isControl(id)) continue;
      const b = t.tokenBytes(id);
      if (b.length === 0) continue;
      const key = latin1(b, 0, b.length);
      const had = map.get(key);
      if (had === undefined || (BYTE_TOKEN.test(t.tokenText(had)) && !BYTE_TOKEN.test(t.tokenText(id)))) map.set(key, id);
      if (b.length > this.longestToken) this.longestToken = b.length;
    }
    this.byBytes = map;
    return map;
  }
}

/**
 * Characters the vocabulary can write, for error messages: whether every byte has a token (byte
 * fallback), and otherwise which characters appear in some token. A grammar needing a character outside
 * this set cannot be completed with this model (TinyStories-656K: no { } [ ] \ ( ) and no byte tokens).
 */
export interface VocabularyCoverage {
  /** Every byte 0x00-0xFF is a token by itself: any UTF-8 text can be written. */
  allBytes: boolean;
  /** Whether a character appears in at least one token (always true when allBytes). */
  has(char: string): boolean;
  /** The characters found in tokens, sorted (empty when allBytes: everything is possible). */
  characters: string;
}

const coverages = new WeakMap<Tokenizer, VocabularyCoverage>();

export function vocabularyCoverage(tokenizer: Tokenizer): VocabularyCoverage {
  let c = coverages.get(tokenizer);
  if (c) return c;
  const singles = new Set<number>();
  const chars = new Set<string>();
  const decoder = new TextDecoder('utf-8', { fatal: false });
  for (let id = 0; id < tokenizer.vocabSize; id++) {
    const b = tokenizer.tokenBytes(id);
    if (b.length === 1) singles.add(b[0]);
    for (const ch of decoder.decode(b)) if (ch !== '\uFFFD') chars.add(ch);
  }
  const allBytes = singles.size === 256;
  c = {
    allBytes,
    has: (ch: string) => allBytes || chars.has(ch),
    characters: allBytes ? '' : [...chars].sort().join(''),
  };
  coverages.set(tokenizer, c);
  return c;
}

function latin1(bytes: Uint8Array, at: number, len: number): string {
  let s = '';
  for (let i = at; i < at + len; i++) s += String.fromCharCode(bytes[i]);
  return s;
}

const vocabularies = new WeakMap<XGrammarRuntime, WeakMap<Tokenizer, Promise<GrammarVocabulary>>>();

/** The tokenizer's vocabulary in the current xgrammar runtime, built on first use. */
export async function grammarVocabulary(tokenizer: Tokenizer): Promise<GrammarVocabulary> {
  const runtime = await xgrammarRuntime();
  let perRuntime = vocabularies.get(runtime);
  if (!perRuntime) {
    perRuntime = new WeakMap();
    vocabularies.set(runtime, perRuntime);
  }
  let v = perRuntime.get(tokenizer);
  if (!v) {
    v = GrammarVocabulary.build(runtime, tokenizer);
    perRuntime.set(tokenizer, v);
    const built = v;
    built.catch(() => {
      if (perRuntime.get(tokenizer) === built) perRuntime.delete(tokenizer);
    });
  }
  return v;
}
