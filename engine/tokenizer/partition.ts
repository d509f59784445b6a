/**
 * Cuts special tokens out of the text before encoding (llama.cpp's tokenizer_st_partition).
 * User-defined tokens are always cut out; control and unknown tokens only when parsing special text.
 */
import { Attr } from './attrs.ts';
import type { Vocab } from './vocab.ts';

export type Fragment = { text: string } | { token: number };

/** C isspace() in the "C" locale, which llama.cpp uses for the strip attributes. */
const isCSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);

export function partitionSpecial(text: string, vocab: Vocab, parseSpecial: boolean): Fragment[] {
  type Piece = { start: number; end: number } | { token: number };
  let pieces: Piece[] = text.length > 0 ? [{ start: 0, end: text.length }] : [];

  for (const id of vocab.specialTokensByLength) {
    const attr = vocab.attrs[id];
    if (!parseSpecial && attr & (Attr.CONTROL | Attr.UNKNOWN)) continue;
    const needle = vocab.texts[id];
    const next: Piece[] = [];
    for (const piece of pieces) {
      if ('token' in piece) {
        next.push(piece);
        continue;
      }
      // Search only this piece: a search running on past its end, once per piece and special token,
      // would make prompts full of special tokens quadratic.
      const hay = text.slice(piece.start, piece.end);
      const base = piece.start;
      let from = 0;
      for (;;) {
        const at = hay.indexOf(needle, from);
        if (at < 0) {
          if (hay.length > from) next.push({ start: base + from, end: piece.end });
          break;
        }
        let leftEnd = at;
        if (attr & Attr.LSTRIP) while (leftEnd > from && isCSpace(hay.charCodeAt(leftEnd - 1))) leftEnd--;
        if (leftEnd > from) next.push({ start: base + from, end: base + leftEnd });
        next.push({ token: id });
        from = at + needle.length;
        if (attr & Attr.RSTRIP) while (from < hay.length && isCSpace(hay.charCodeAt(from))) from++;
      }
    }
    pieces = next;
  }
  return pieces.map((p) => ('token' in p ? p : { text: text.slice(p.start, p.end) }));
}
