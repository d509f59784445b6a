/**
 * Byte-level BPE as llama.cpp does it (llm_tokenizer_bpe_session): pre-tokenize, write each word in
 * the byte-level alphabet, then repeatedly merge the adjacent pair with the lowest merge rank
 * (leftmost on ties). Words repeat a lot in real text, so results are cached per word.
 */
import type { GgufMetadata } from '../gguf/parse.ts';
import { toByteLevel } from './byte-level.ts';
import { Heap } from './heap.ts';
import { preTokenize } from './pre-tokenize.ts';
import type { PreTokenizer } from './pre-tokenizers.ts';
import { utf8Encoder } from './utf8.ts';
import type { Vocab } from './vocab.ts';

interface Bigram {
  left: number;
  right: number;
  rank: number;
  size: number;
}

const better = (a: Bigram, b: Bigram) => a.rank < b.rank || (a.rank === b.rank && a.left < b.left);

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
    const prev = Array.from({ length: count }, (_, i) => i - 1);
    const next = Array.from({ length: count }, (_, i) => (i + 1 < count ? i + 1 : -1));

    const queue = new Heap<Bigram>(better);
    const tryPair = (left: number, right: number) => {
      if (left === -1 || right === -1) return;
      const rank = this.rank(word.substr(start[left], len[left]), word.substr(start[right], len[right]));
      if (rank === undefined) return;
      queue.push({ left, right, rank, size: len[left] + len[right] });
    };
    for (let i = 1; i < count; i++) tryPair(i - 1, i);

    for (let b = queue.pop(); b !== undefined; b = queue.pop()) {
      // Symbols only grow, so an unchanged total length means the queued pair is still current.
      if (len[b.left] === 0 || len[b.right] === 0 || len[b.left] + len[b.right] !== b.size) continue;
      len[b.left] += len[b.right];
      len[b.right] = 0;
      next[b.left] = next[b.right];
      if (next[b.right] >= 0) prev[next[b.right]] = b.left;
      tryPair(prev[b.left], b.left);
      tryPair(b.left, next[b.left]);
    }

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
