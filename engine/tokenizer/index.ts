/** Tokenizers built from GGUF metadata: SentencePiece ("llama") and byte-level BPE ("gpt2") vocabularies. */
import type { GgufMetadata } from '../gguf/parse.ts';
import { GgufTokenizer } from './tokenizer.ts';
import type { Tokenizer } from './types.ts';

export type { StreamDecoder, Tokenizer } from './types.ts';
export { SUPPORTED_PRE_TOKENIZERS } from './pre-tokenizers.ts';

/** Throws, naming the metadata key and value, for a tokenizer model or pre-tokenizer we do not support. */
export function createTokenizer(metadata: GgufMetadata): Tokenizer {
  return new GgufTokenizer(metadata);
}
