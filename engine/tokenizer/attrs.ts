/**
 * Token attributes as llama.cpp keeps them (llama_token_attr). GGUF stores one token type per token;
 * llama.cpp turns it into these bits and then adds more by rules on token text (see vocab.ts), so the
 * tokenizer works on bits, never on the raw type.
 */
export const Attr = {
  UNDEFINED: 0,
  UNKNOWN: 1 << 0,
  UNUSED: 1 << 1,
  NORMAL: 1 << 2,
  CONTROL: 1 << 3,
  USER_DEFINED: 1 << 4,
  BYTE: 1 << 5,
  NORMALIZED: 1 << 6,
  LSTRIP: 1 << 7,
  RSTRIP: 1 << 8,
  SINGLE_WORD: 1 << 9,
} as const;

/** GGUF tokenizer.ggml.token_type values. */
const TYPE_TO_ATTR: Record<number, number> = {
  0: Attr.UNDEFINED,
  1: Attr.NORMAL,
  2: Attr.UNKNOWN,
  3: Attr.CONTROL,
  4: Attr.USER_DEFINED,
  5: Attr.UNUSED,
  6: Attr.BYTE,
};

export function attrFromTokenType(type: number): number {
  // Unknown type numbers are UNDEFINED in llama.cpp too: such tokens decode to nothing.
  return TYPE_TO_ATTR[type] ?? Attr.UNDEFINED;
}

/** Tokens that plain decoding hides (llama.cpp's token_to_piece with special=false returns nothing for them). */
export const HIDDEN_ATTRS = Attr.UNKNOWN | Attr.CONTROL;
