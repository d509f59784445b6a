/**
 * SentencePiece-style encoding as llama.cpp does it (llm_tokenizer_spm_session): start from single
 * characters, repeatedly merge the adjacent pair whose concatenation is the best-scoring vocabulary
 * entry (leftmost on ties), then spell whatever is not a token with byte tokens.
 */
import { mergeSymbols } from './merge.ts';
import { utf8Encoder } from './utf8.ts';
import type { Vocab } from './vocab.ts';

export class SpmEncoder {
  /** Token per byte value, -1 where the vocabulary has none. */
  private readonly byteTokens = new Int32Array(256).fill(-1);

  constructor(private readonly vocab: Vocab) {
    // llama.cpp's byte_to_token: <0xXX>, else the byte itself as text.
    for (let b = 0; b < 256; b++) {
      const hex = b.toString(16).toUpperCase().padStart(2, '0');
      const id = vocab.idOf(`<0x${hex}>`) ?? (b < 0x80 ? vocab.idOf(String.fromCharCode(b)) : undefined);
      if (id !== undefined) this.byteTokens[b] = id;
    }
  }

  /** Appends the tokens of `text` (spaces already written as U+2581) to `out`. */
  encode(text: string, out: number[]): void {
    // Symbols are code points, kept as UTF-16 ranges of `text` in a doubly linked list.
    const start: number[] = [];
    const len: number[] = [];
    for (let i = 0; i < text.length; ) {
      const n = (text.codePointAt(i) as number) > 0xffff ? 2 : 1;
      start.push(i);
      len.push(n);
      i += n;
    }
    const count = start.length;
    if (count === 0) return;
    // Merging two symbols makes the concatenation's token; the best-scoring one merges first.
    const next = mergeSymbols(len, (left, right) => {
      const id = this.vocab.idOf(text.substr(start[left], len[left] + len[right]));
      return id === undefined ? undefined : -this.vocab.scores[id];
    });

    for (let i = 0; i !== -1; i = next[i]) {
      const piece = text.substr(start[i], len[i]);
      const id = this.vocab.idOf(piece);
      if (id !== undefined) out.push(id);
      else this.spellOut(piece, out);
    }
  }

  /**
   * A piece that is not a token is a single character (merges only ever build tokens). It is spelled
   * with byte tokens; where the vocabulary lacks one of its bytes, llama.cpp aborts, and we emit the
   * unknown token for the whole character instead (nothing if the vocabulary has no unknown token).
   */
  private spellOut(piece: string, out: number[]): void {
    const bytes = utf8Encoder.encode(piece);
    const ids: number[] = [];
    for (const b of bytes) {
      const id = this.byteTokens[b];
      if (id < 0) {
        if (this.vocab.special.unk !== undefined) out.push(this.vocab.special.unk);
        return;
      }
      ids.push(id);
    }
    out.push(...ids);
  }
}
