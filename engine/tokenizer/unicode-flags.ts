/**
 * Per-code-point classes the BPE pre-tokenizers test (llama.cpp's unicode_cpt_flags, reduced to what
 * they use). Letters and numbers come from the JS engine's Unicode tables, which may be a newer Unicode
 * version than llama.cpp's: code points assigned since then classify differently (rare scripts only).
 */

export const LETTER = 1;
export const NUMBER = 2;
export const WHITESPACE = 4;
/** Set for every code point, so a position inside the text never has flags 0 (llama.cpp's "in range" test). */
export const ANY = 8;

/**
 * llama.cpp's whitespace set. It differs from JS \s: it has U+0085 (NEL) and lacks U+FEFF (BOM),
 * so the pre-tokenizers never use \s on raw text.
 */
export const WHITESPACE_CODE_POINTS: ReadonlySet<number> = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005,
  0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

const IS_LETTER = /^\p{L}$/u;
const IS_NUMBER = /^\p{N}$/u;

// Filled lazily: a regex test per distinct code point seen, then a table read.
let table: Uint8Array | undefined;

export function codePointFlags(cp: number): number {
  table ??= new Uint8Array(0x110000);
  let f = table[cp];
  if (f === 0) {
    const s = String.fromCodePoint(cp);
    f = ANY;
    if (IS_LETTER.test(s)) f |= LETTER;
    if (IS_NUMBER.test(s)) f |= NUMBER;
    if (WHITESPACE_CODE_POINTS.has(cp)) f |= WHITESPACE;
    table[cp] = f;
  }
  return f;
}
