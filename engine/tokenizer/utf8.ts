/** UTF-8 and string helpers shared by the encoders and decoders. */

export const utf8Encoder = new TextEncoder();

/**
 * JS strings may hold lone surrogates, which have no UTF-8 form. node-llama-cpp (and any UTF-8
 * boundary) turns each into U+FFFD before llama.cpp sees the text, so we do the same up front.
 */
export function toWellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** Length in UTF-8 bytes, without allocating (used to order special tokens as llama.cpp does, by byte length). */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}
