/** What the rest of the system needs from a tokenizer; built from GGUF metadata (see engine/tokenizer/). */
export interface Tokenizer {
  readonly kind: 'llama' | 'gpt2';
  readonly vocabSize: number;
  readonly bos: number | undefined;
  readonly eos: number | undefined;
  /** Whether the model expects BOS at the start of a prompt (tokenizer.ggml.add_bos_token, llama.cpp's default otherwise). */
  readonly addBos: boolean;
  /**
   * Token ids as llama.cpp produces them. `addBos` defaults to the model's setting; `parseSpecial`
   * (default false) turns control-token text such as `<|eot_id|>` into those tokens.
   */
  encode(text: string, opts?: { addBos?: boolean; parseSpecial?: boolean }): number[];
  /** Text of a token sequence; invalid UTF-8 becomes U+FFFD. Special tokens are omitted unless `special`. */
  decode(tokens: readonly number[], opts?: { special?: boolean }): string;
  /** The raw bytes a token stands for (byte-fallback and byte-level tokens decoded); empty for control tokens. */
  tokenBytes(id: number): Uint8Array;
  /** The vocabulary entry as stored in GGUF (for grammar engines that want the encoded form). */
  tokenText(id: number): string;
  /** End-of-generation tokens (EOS, EOT, ...): sampling one ends generation. */
  isEndOfGeneration(id: number): boolean;
  /** Control/special tokens, which generated text never shows. */
  isControl(id: number): boolean;
  /** A decoder that returns only complete UTF-8 characters, holding back a partial one. */
  streamDecoder(): StreamDecoder;
}

export interface StreamDecoder {
  /** Text made complete by this token (may be ''). */
  push(id: number): string;
  /** Whatever is still held back, with incomplete bytes as U+FFFD. */
  flush(): string;
}
