/**
 * Pre-tokenizers by tokenizer.ggml.pre, as llama.cpp maps them (llama-vocab.cpp: the pre-type table and
 * llm_tokenizer_bpe's regex lists), with the per-family settings that travel with them.
 */
import { ASCII_WS, type PreTokenizerStep } from './pre-tokenize.ts';
import { splitGpt2, splitLlama3, splitQwen2 } from './split-custom.ts';

export interface PreTokenizer {
  steps: readonly PreTokenizerStep[];
  /** Decode removes spaces before punctuation and some contractions (llama.cpp clean_spaces). */
  cleanSpaces: boolean;
  /** A whole pre-tokenized word found in the vocabulary is one token, even if no merge chain builds it. */
  ignoreMerges?: boolean;
  /** Overrides llama.cpp's BPE default add_bos=false (metadata still has the last word). */
  addBos?: boolean;
  /** This family has no BOS unless the metadata names one. */
  noDefaultBos?: boolean;
}

const gpt2: PreTokenizerStep = { custom: splitGpt2 };
const llama3: PreTokenizerStep = { custom: splitLlama3 };
const qwen2: PreTokenizerStep = { custom: splitQwen2 };
const re = (source: string): PreTokenizerStep => ({ regex: new RegExp(source, 'gu') });

// Copied from llama.cpp (originally the models' tokenizer.json); the text they run on has only ASCII whitespace.
const DEEPSEEK_LETTERS = '[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]';
const DEEPSEEK_PUNCT = '[!-/:-~！-／：-～‘-‟　-。]';
const CJK = '[一-龥ࠀ-一가-퟿]';

const LLAMA3: PreTokenizer = { steps: [llama3], cleanSpaces: true, ignoreMerges: true, addBos: true };
const LLAMA3_REGEX: PreTokenizer = { steps: [llama3], cleanSpaces: true };
const QWEN2: PreTokenizer = { steps: [qwen2], cleanSpaces: false };
const QWEN2_CLEAN: PreTokenizer = { steps: [qwen2], cleanSpaces: true };
const GPT2: PreTokenizer = { steps: [gpt2], cleanSpaces: true };
const GPT2_RAW: PreTokenizer = { steps: [gpt2], cleanSpaces: false };
const DIGITS_THEN_GPT2: PreTokenizer = { steps: [re('\\p{N}'), gpt2], cleanSpaces: true };
const DIGITS_THEN_GPT2_RAW: PreTokenizer = { steps: [re('\\p{N}'), gpt2], cleanSpaces: false };

/** llama.cpp's pre-tokenizer for a missing or "default" tokenizer.ggml.pre. */
const DEFAULT_PRE_TOKENIZER: PreTokenizer = {
  steps: [re('[\\p{P}\\$\\+<=>\\^~\\|]+'), gpt2, re('\\p{N}+'), re('[0-9][0-9][0-9]')],
  cleanSpaces: true,
};

const TABLE: Record<string, PreTokenizer> = {
  default: DEFAULT_PRE_TOKENIZER,
  ...Object.fromEntries(
    ['llama3', 'llama-v3', 'llama-bpe', 'falcon3', 'falcon-h1', 'pixtral', 'midm-2.0', 'lfm2', 'jina-v5-nano'].map((n) => [n, LLAMA3]),
  ),
  dbrx: LLAMA3_REGEX,
  'smaug-bpe': LLAMA3_REGEX,
  glm4: { ...LLAMA3_REGEX, noDefaultBos: true },
  'chatglm-bpe': { ...LLAMA3_REGEX, noDefaultBos: true },
  ...Object.fromEntries(
    ['qwen2', 'deepseek-r1-qwen', 'kormo', 'f2llmv2', 'hunyuan', 'solar-open', 'grok-2'].map((n) => [n, QWEN2]),
  ),
  megrez: QWEN2_CLEAN,
  stablelm2: QWEN2_CLEAN,
  ...Object.fromEntries(
    ['gpt-2', 'phi-2', 'jina-es', 'jina-de', 'gigachat', 'jina-v2-es', 'jina-v2-de', 'a.x-4.0', 'mellum', 'modern-bert', 'exaone4', 'mpt', 'olmo', 'jais'].map(
      (n) => [n, GPT2],
    ),
  ),
  trillion: GPT2_RAW,
  'granite-docling': GPT2_RAW,
  ...Object.fromEntries(['starcoder', 'refact', 'codeshell', 'exaone', 'minerva-7b', 'mellum2'].map((n) => [n, DIGITS_THEN_GPT2])),
  'command-r': DIGITS_THEN_GPT2_RAW,
  smollm: DIGITS_THEN_GPT2_RAW,
  falcon: { steps: [re('[\\p{P}\\$\\+<=>\\^~\\|`]+'), gpt2, re('[0-9][0-9][0-9]')], cleanSpaces: true },
  'deepseek-llm': {
    steps: [
      re('[\\r\\n]'),
      re(`[${ASCII_WS}]?${DEEPSEEK_LETTERS}+`),
      re(`[${ASCII_WS}]?${DEEPSEEK_PUNCT}+`),
      re(`[${ASCII_WS}]+$`),
      re(`${CJK}+`),
      re('\\p{N}+'),
    ],
    cleanSpaces: false,
  },
  'deepseek-coder': {
    steps: [re('[\\r\\n]'), re(`[${ASCII_WS}]?\\p{L}+`), re(`[${ASCII_WS}]?\\p{P}+`), re(`${CJK}+`), re('\\p{N}')],
    cleanSpaces: false,
  },
};

export const SUPPORTED_PRE_TOKENIZERS: readonly string[] = Object.keys(TABLE);

/** The pre-tokenizer llama.cpp would use; an empty or missing name means "default", as in llama.cpp. */
export function preTokenizerFor(name: string | undefined): PreTokenizer {
  if (name === undefined || name === '') return DEFAULT_PRE_TOKENIZER;
  const p = TABLE[name];
  if (!p) {
    throw new Error(
      `unsupported BPE pre-tokenizer "${name}" (tokenizer.ggml.pre); supported: ${SUPPORTED_PRE_TOKENIZERS.join(', ')}`,
    );
  }
  return p;
}
