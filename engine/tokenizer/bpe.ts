/**
 * Byte-level BPE as llama.cpp does it (llm_tokenizer_bpe_session): pre-tokenize, write each word in
 * the byte-level alphabet, then repeatedly merge the adjacent pair with the lowest merge rank
 * (leftmost on ties). Words repeat a lot in real text, so results are cached per word.
 */
import type { GgufMetadata } from '../gguf/parse.ts';
import { toByteLevel } from './byte-level.ts';
import { mergeSymbols } from './merge.ts';
import { preTokenize } from './pre-tokenize.ts';
import type { PreTokenizer } from './pre-tokenizers.ts';
import { utf8Encoder } from './utf8.ts';
import type { Vocab } from './vocab.ts';

/** Keeps memory bounded on long-running servers that see unbounded distinct words. */
const MAX_CACHED_WORDS = 50_000;


export class BpeEncoder {
  /** Merge rank by merge line ("left right"); see rank() for why the line itself is an exact key. */
  private readonly ranks = new Map<string, number>();
  private readonly cache = new Map<string, number[]>();

  private readonly pre: PreTokenizer;

  constructor(
    private readonly vocab: Vocab,
    metadata: GgufMetadata,
  ) {
    if (!vocab.preTokenizer) throw new Error(`a ${vocab.kind} vocabulary has no BPE pre-tokenizer`);
    this.pre = vocab.preTokenizer;
    const merges = metadata.strings('tokenizer.ggml.merges');
    for (let i = 0; i < merges.length; i++) {
      // A line without a space after its first character is llama.cpp's ("", "") pair, which no
      // pair of symbols can ask for. Repeated lines keep their first rank, as in llama.cpp.
      const line = merges[i];
      if (line.indexOf(' ', 1) > 0 && !this.ranks.has(line)) this.ranks.set(line, i);
    }
  }

  /**
   * llama.cpp splits each merge line at its first space after the first character. So "left right"
   * names the pair (left, right) exactly when left has no space after its first character; otherwise
   * the line stood for a different pair and (left, right) has no rank.
   */
  private rank(left: string, right: string): number | undefined {
    return left.indexOf(' ', 1) >= 0 ? undefined : this.ranks.get(`${left} ${right}`);
  }

  /** Appends the tokens of a text fragment (no special tokens inside) to `out`. */
  encode(text: string, out: number[]): void {
    for (const word of preTokenize(text, this.pre.steps)) {
      const encoded = toByteLevel(word);
      let ids = this.cache.get(encoded);
      if (!ids) {
        ids = this.encodeWord(encoded);
        if (this.cache.size >= MAX_CACHED_WORDS) this.cache.clear();
        this.cache.set(encoded, ids);
      }
      for (const id of ids) out.push(id);
    }
  }

  private encodeWord(word: string): number[] {
    if (this.pre.ignoreMerges) {
      const whole = this.vocab.idOf(word);
      if (whole !== undefined) return [whole];
    }
    // Byte-level characters are all in the BMP, so a symbol starts as one UTF-16 unit.
    const count = word.length;
    const start = Array.from({ length: count }, (_, i) => i);
    const len = new Array<number>(count).fill(1);
    mergeSymbols(len, (left, right) => this.rank(word.substr(start[left], len[left]), word.substr(start[right], len[right])));

    const ids: number[] = [];
    for (let i = 0; i < count; i++) {
      if (len[i] === 0) continue;
      const piece = word.substr(start[i], len[i]);
      const id = this.vocab.idOf(piece);
      if (id !== undefined) {
        ids.push(id);
        continue;
      }
      // Only an inconsistent vocabulary (a merge whose result is not a token) gets here. llama.cpp
      // then looks up each UTF-8 byte of the piece as a one-byte token, which only ASCII can match.
      for (const byte of utf8Encoder.encode(piece)) {
        const single = byte < 0x80 ? this.vocab.idOf(String.fromCharCode(byte)) : undefined;
        if (single !== undefined) ids.push(single);
      }
    }
    return ids;
  }
}
