/**
 * Token ids back to bytes and text, as llama.cpp's token_to_piece and llama_detokenize do it
 * (with remove_special=false, the way node-llama-cpp and the llama.cpp server call it).
 */
import { Attr, HIDDEN_ATTRS } from './attrs.ts';
import { fromByteLevel } from './byte-level.ts';
import { utf8Encoder } from './utf8.ts';
import type { Vocab } from './vocab.ts';

const EMPTY = new Uint8Array(0);
const SPACE = 0x20;
const SPM_SPACE = /\u2581/g;

export function checkTokenId(vocab: Vocab, id: number): void {
  if (!Number.isInteger(id) || id < 0 || id >= vocab.size) {
    throw new RangeError(`token id ${id} is outside the vocabulary (0..${vocab.size - 1})`);
  }
}

/** Bytes of one token; hidden tokens give nothing unless `special`. */
export function tokenPiece(vocab: Vocab, id: number, special: boolean): Uint8Array {
  checkTokenId(vocab, id);
  const attr = vocab.attrs[id];
  if (!special && attr & HIDDEN_ATTRS) return EMPTY;
  const text = vocab.texts[id];
  if (attr & (HIDDEN_ATTRS | Attr.USER_DEFINED)) return utf8Encoder.encode(text);
  if (attr & Attr.NORMAL) {
    return vocab.kind === 'llama' ? utf8Encoder.encode(text.replace(SPM_SPACE, ' ')) : fromByteLevel(text);
  }
  if (attr & Attr.BYTE) return Uint8Array.of(parseInt(text.substr(3, 2), 16) || 0); // "<0xXX>"
  return EMPTY; // unused and undefined tokens have no text
}

/**
 * Bytes of a token sequence. The first token loses one leading space when the vocabulary adds a space
 * prefix on encoding (a leading BOS takes that turn, so text after BOS keeps its space, as in llama.cpp).
 */
export function detokenizeBytes(vocab: Vocab, ids: readonly number[], pieceOf: (id: number) => Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  let total = 0;
  ids.forEach((id, i) => {
    let piece = pieceOf(id);
    if (i === 0 && vocab.addSpacePrefix && piece.length > 0 && piece[0] === SPACE) piece = piece.subarray(1);
    parts.push(piece);
    total += piece.length;
  });
  let bytes: Uint8Array = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  if (vocab.cleanSpaces) bytes = cleanSpaces(bytes);
  return bytes;
}

const ch = (c: string) => c.charCodeAt(0);

/**
 * llama.cpp's clean_up_tokenization_spaces, byte for byte: " ?" " !" " ." " ," lose the space,
 * " ' " becomes "'", and " 's" " 'm" " 're" " 've" lose the space.
 */
export function cleanSpaces(text: Uint8Array): Uint8Array {
  const n1 = text.length;
  if (n1 === 0) return text;
  const p1: number[] = [text[0]];
  for (let i = 1; i < n1; i++) {
    const x = text[i];
    if (text[i - 1] === SPACE && (x === ch('?') || x === ch('!') || x === ch('.') || x === ch(','))) p1.pop();
    p1.push(x);
  }

  const p2: number[] = [p1[0]];
  // llama.cpp overwrites the space after a stripped apostrophe with NUL in place, and the next
  // character then sees NUL, not a space, before it.
  let prevIsNul = false;
  for (let i = 1; i < p1.length; i++) {
    const prev = prevIsNul ? 0 : p1[i - 1];
    prevIsNul = false;
    const x = p1[i];
    if (x === ch("'") && i + 1 < p1.length && prev === SPACE && p1[i + 1] === SPACE) {
      p2.pop();
      i++;
      prevIsNul = true;
    }
    p2.push(x);
  }

  const p3: number[] = [p2[0]];
  for (let i = 1; i < p2.length; i++) {
    const x = p2[i];
    if (p2[i - 1] === SPACE && x === ch("'") && i + 1 < p2.length) {
      const x1 = p2[i + 1];
      if (x1 === ch('s') || x1 === ch('m')) {
        p3.pop();
      } else if (x1 !== ch('t') && x1 !== ch('d') && i + 2 < p2.length) {
        const x2 = p2[i + 2];
        if ((x1 === ch('r') && x2 === ch('e')) || (x1 === ch('v') && x2 === ch('e'))) p3.pop();
      }
    }
    p3.push(x);
  }
  return Uint8Array.from(p3);
}
