/**
 * GPT-2's byte-level alphabet: every byte is shown as a printable code point (printable Latin-1 bytes
 * as themselves, the rest as U+0100 onwards), so BPE vocabularies hold any byte sequence as text.
 */
import { utf8Encoder } from './utf8.ts';

const BYTE_TO_CHAR: string[] = new Array(256);
const CHAR_TO_BYTE = new Map<number, number>();
{
  const keepsItself = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const cp = keepsItself(b) ? b : next++;
    BYTE_TO_CHAR[b] = String.fromCharCode(cp);
    CHAR_TO_BYTE.set(cp, b);
  }
}

/** Text as BPE sees it: its UTF-8 bytes, each written as its byte-level character. */
export function toByteLevel(text: string): string {
  let out = '';
  for (const b of utf8Encoder.encode(text)) out += BYTE_TO_CHAR[b];
  return out;
}

/**
 * Bytes a byte-level vocabulary entry stands for. A character outside the alphabet is kept the way
 * llama.cpp's llama_decode_text keeps it, as "[UNK_BYTE_0x<hex><entry>]", so output matches byte for byte.
 */
export function fromByteLevel(tokenText: string): Uint8Array {
  const out: number[] = [];
  for (const ch of tokenText) {
    const b = CHAR_TO_BYTE.get(ch.codePointAt(0) as number);
    if (b !== undefined) {
      out.push(b);
    } else {
      const hex = Array.from(utf8Encoder.encode(ch), (x) => x.toString(16).padStart(2, '0')).join('');
      out.push(...utf8Encoder.encode(`[UNK_BYTE_0x${hex}${tokenText}]`));
    }
  }
  return Uint8Array.from(out);
}
