/** Seeded random strings for the tokenizer tests, so a failure names a reproducible input. */
import { rng } from '../helpers/random.ts';

/**
 * Pieces that hit tokenizer rules: whitespace runs and odd spaces, contractions in both cases,
 * punctuation and symbols, digit runs, combining marks, many scripts, emoji sequences, controls,
 * lone surrogates, and special-token look-alikes.
 */
const ATOMS = [
  ' ', '  ', '   ', '\t', '\n', '\r\n', '\r', '\n\n', ' \n', '\u00a0', '\u3000', '\u2028', '\u0085', '\ufeff', '\u200b',
  "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'d", "'x", "'", '"', '.', ',', '!', '?', '...', '-', '_', '(', ')', '[', ']',
  '{', '}', '<', '>', '/', '\\', '|', '$', '+', '=', '^', '~', '`', '#', '@', '%', '&', '*',
  '0', '1', '12', '123', '1234', '12345', '١٢٣', '½', '²', 'Ⅻ',
  'a', 'the', 'The', 'HELLO', 'world', 'don', 'café', 'naïve', 'e\u0301', 'ß', 'İ', 'Ω', 'K', 'µ', 'ǅ', 'ﬁ',
  '日本', '中文', '한국', 'こんにちは', 'カタカナ', 'ｱｲｳ', 'ＡＢＣ', '！', '。', '，',
  'مرحبا', 'שלום', 'Привет', 'Γειά', 'हिन्दी', 'ไทย', '😀', '👍🏽', '👨‍👩‍👧', '🇺🇸', '❤️', '𝔘', '𓀀',
  '\u0000', '\u0007', '\u007f', '\ud800', '\udc00',
  '<s>', '</s>', '<unk>', '<|endoftext|>', '<|eot_id|>', '<|user|>', '<|im_end|>', '▁', 'Ġ', 'Ċ',
];

/** `count` strings of 1 to 12 atoms each. */
export function tokenizerStressTexts(seed: number, count: number): string[] {
  const r = rng(seed);
  return Array.from({ length: count }, () => {
    let s = '';
    const n = 1 + Math.floor(r() * 12);
    for (let i = 0; i < n; i++) s += ATOMS[Math.floor(r() * ATOMS.length)];
    return s;
  });
}

/** Strings of arbitrary UTF-16 units and code points from every plane: nothing here is well-behaved. */
export function garbageTexts(seed: number, count: number): string[] {
  const r = rng(seed);
  const out: string[] = [];
  for (let n = 0; n < count; n++) {
    let s = '';
    const len = Math.floor(r() * 40);
    for (let i = 0; i < len; i++) {
      const pick = r();
      if (pick < 0.2) s += ATOMS[Math.floor(r() * ATOMS.length)];
      else if (pick < 0.5) s += String.fromCharCode(Math.floor(r() * 0x10000)); // surrogates included
      else if (pick < 0.7) s += String.fromCodePoint(Math.floor(r() * 0x110000));
      else s += String.fromCharCode(0x20 + Math.floor(r() * 0x5f));
    }
    out.push(s);
  }
  return out;
}
