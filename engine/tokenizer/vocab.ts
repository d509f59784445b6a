/**
 * The vocabulary as llama.cpp sees it after loading (llama_vocab::impl::load): token texts, scores and
 * attributes, the special token ids with llama.cpp's defaults, and the flags that steer encoding and
 * decoding. The rules llama.cpp applies by token text live in special-token-rules.ts.
 */
import type { GgufArray, GgufMetadata } from '../gguf/parse.ts';
import { Attr, attrFromTokenType } from './attrs.ts';
import { preTokenizerFor, type PreTokenizer } from './pre-tokenizers.ts';
import { applySpecialTokenRules, applyStripRules, specialTokensLongestFirst } from './special-token-rules.ts';

export type VocabKind = 'llama' | 'gpt2';

export interface SpecialIds {
  bos?: number;
  eos?: number;
  eot?: number;
  eom?: number;
  unk?: number;
  sep?: number;
  pad?: number;
  mask?: number;
  fimPre?: number;
  fimSuf?: number;
  fimMid?: number;
  fimPad?: number;
  fimRep?: number;
  fimSep?: number;
}

export interface Vocab {
  readonly kind: VocabKind;
  readonly size: number;
  /** Token texts; empty entries read "[EMPTY_<id>]" as in llama.cpp. */
  readonly texts: readonly string[];
  readonly scores: Float32Array;
  readonly attrs: Uint16Array;
  readonly special: Readonly<SpecialIds>;
  readonly eog: ReadonlySet<number>;
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly addSpacePrefix: boolean;
  readonly cleanSpaces: boolean;
  /** Only for gpt2 vocabularies. */
  readonly preTokenizer?: PreTokenizer;
  /** Tokens that are cut out of text before encoding, longest text first (llama.cpp's cache_special_tokens). */
  readonly specialTokensByLength: readonly number[];
  idOf(text: string): number | undefined;
}

const SPECIAL_ID_KEYS: readonly [string, keyof SpecialIds][] = [
  ['tokenizer.ggml.bos_token_id', 'bos'],
  ['tokenizer.ggml.eos_token_id', 'eos'],
  ['tokenizer.ggml.eot_token_id', 'eot'],
  ['tokenizer.ggml.eom_token_id', 'eom'],
  ['tokenizer.ggml.unknown_token_id', 'unk'],
  ['tokenizer.ggml.seperator_token_id', 'sep'], // sic: the GGUF key is spelled this way
  ['tokenizer.ggml.padding_token_id', 'pad'],
  ['tokenizer.ggml.mask_token_id', 'mask'],
  ['tokenizer.ggml.fim_pre_token_id', 'fimPre'],
  ['tokenizer.ggml.fim_suf_token_id', 'fimSuf'],
  ['tokenizer.ggml.fim_mid_token_id', 'fimMid'],
  ['tokenizer.ggml.fim_pad_token_id', 'fimPad'],
  ['tokenizer.ggml.fim_rep_token_id', 'fimRep'],
  ['tokenizer.ggml.fim_sep_token_id', 'fimSep'],
  // Older files name the FIM tokens so.
  ['tokenizer.ggml.prefix_token_id', 'fimPre'],
  ['tokenizer.ggml.suffix_token_id', 'fimSuf'],
  ['tokenizer.ggml.middle_token_id', 'fimMid'],
];

function numbers(md: GgufMetadata, key: string, want: number): ArrayLike<number> | undefined {
  const v: GgufArray | undefined = md.optionalArray(key);
  if (v === undefined) return undefined;
  if (!(ArrayBuffer.isView(v) || (Array.isArray(v) && (v.length === 0 || typeof v[0] === 'number')))) {
    throw new Error(`GGUF metadata "${key}" must be an array of numbers`);
  }
  const arr = v as ArrayLike<number>;
  if (arr.length < want) throw new Error(`GGUF metadata "${key}" has ${arr.length} entries but the vocabulary has ${want} tokens`);
  return arr;
}

export function loadVocab(md: GgufMetadata): Vocab {
  const model = md.string('tokenizer.ggml.model');
  if (model !== 'llama' && model !== 'gpt2') {
    throw new Error(
      `unsupported tokenizer model "${model}" (tokenizer.ggml.model); supported: "llama" (SentencePiece) and "gpt2" (byte-level BPE)`,
    );
  }
  const kind: VocabKind = model;
  const preName = md.optionalString('tokenizer.ggml.pre');
  // llama.cpp ignores tokenizer.ggml.pre for SentencePiece vocabularies.
  const preTokenizer = kind === 'gpt2' ? preTokenizerFor(preName) : undefined;

  const raw = md.strings('tokenizer.ggml.tokens');
  const n = raw.length;
  const texts = raw.map((t, i) => (t === '' ? `[EMPTY_${i}]` : t));
  const ids = new Map<string, number>();
  texts.forEach((t, i) => ids.set(t, i)); // a repeated text maps to its last id, as in llama.cpp

  const scores = new Float32Array(n);
  const rawScores = numbers(md, 'tokenizer.ggml.scores', n);
  if (rawScores) for (let i = 0; i < n; i++) scores[i] = rawScores[i];
  const attrs = new Uint16Array(n).fill(Attr.NORMAL);
  const types = numbers(md, 'tokenizer.ggml.token_type', n);
  if (types) for (let i = 0; i < n; i++) attrs[i] = attrFromTokenType(types[i]);

  // Defaults per model family, before metadata has its say.
  const special: SpecialIds = kind === 'llama' ? { bos: 1, eos: 2, unk: 0 } : { bos: preTokenizer?.noDefaultBos ? undefined : 11, eos: 11 };
  const addSpacePrefix = md.bool('tokenizer.ggml.add_space_prefix', kind === 'llama');
  const cleanSpaces = kind === 'gpt2' ? (preTokenizer?.cleanSpaces ?? true) : false;

  for (const field of Object.keys(special) as (keyof SpecialIds)[]) {
    const id = special[field];
    if (id !== undefined && id >= n) special[field] = undefined;
  }
  for (const [key, field] of SPECIAL_ID_KEYS) {
    const id = md.optionalNumber(key);
    // Out-of-range ids (often 0xFFFFFFFF for "none") leave the default in place, as llama.cpp does.
    if (id !== undefined && Number.isInteger(id) && id >= 0 && id < n) special[field] = id;
  }
  const addBos = md.bool('tokenizer.ggml.add_bos_token', kind === 'llama' || (preTokenizer?.addBos ?? false));
  const addEos = md.bool('tokenizer.ggml.add_eos_token', false);

  const eog = applySpecialTokenRules(texts, ids, attrs, special);
  const specialTokensByLength = specialTokensLongestFirst(texts, attrs);
  applyStripRules(md, ids, attrs, specialTokensByLength);

  return {
    kind,
    size: n,
    texts,
    scores,
    attrs,
    special,
    eog,
    addBos,
    addEos,
    addSpacePrefix,
    cleanSpaces,
    preTokenizer,
    specialTokensByLength,
    idOf: (text) => ids.get(text),
  };
}
