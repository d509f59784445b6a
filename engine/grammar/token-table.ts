/**
 * What the grammar code needs of a tokenizer, and a flat copy of it that can cross to a worker.
 *
 * The grammar runtime runs in a worker (engine/grammar/isolated), which has no Tokenizer of its own:
 * rebuilding one would mean parsing the GGUF there. The grammar only asks for each token's bytes and
 * text and which tokens end generation or are control tokens, so that is all we copy.
 */
import type { Tokenizer } from '../tokenizer/types.ts';

export type GrammarTokenizer = Pick<Tokenizer, 'vocabSize' | 'tokenBytes' | 'tokenText' | 'isControl' | 'isEndOfGeneration'>;

/** Structured-clone friendly: typed arrays and plain strings only. */
export interface TokenTableData {
  vocabSize: number;
  /** Every token's bytes, back to back; token i is bytes[offsets[i] .. offsets[i + 1]). */
  bytes: Uint8Array;
  offsets: Uint32Array;
  texts: string[];
  /** 1 = end of generation, 2 = control (bits). */
  flags: Uint8Array;
}

const EOG = 1;
const CONTROL = 2;

export function tokenTableData(t: GrammarTokenizer): TokenTableData {
  const parts: Uint8Array[] = [];
  const offsets = new Uint32Array(t.vocabSize + 1);
  const flags = new Uint8Array(t.vocabSize);
  const texts: string[] = [];
  let total = 0;
  for (let id = 0; id < t.vocabSize; id++) {
    const b = t.tokenBytes(id);
    parts.push(b);
    offsets[id] = total;
    total += b.length;
    texts.push(t.tokenText(id));
    flags[id] = (t.isEndOfGeneration(id) ? EOG : 0) | (t.isControl(id) ? CONTROL : 0);
  }
  offsets[t.vocabSize] = total;
  const bytes = new Uint8Array(total);
  parts.forEach((b, id) => bytes.set(b, offsets[id]));
  return { vocabSize: t.vocabSize, bytes, offsets, texts, flags };
}

/** The copied table as a GrammarTokenizer (inside the worker). */
export class TokenTable implements GrammarTokenizer {
  readonly vocabSize: number;

  constructor(private readonly data: TokenTableData) {
    this.vocabSize = data.vocabSize;
  }

  tokenBytes(id: number): Uint8Array {
    return this.data.bytes.subarray(this.data.offsets[id], this.data.offsets[id + 1]);
  }

  tokenText(id: number): string {
    return this.data.texts[id] ?? '';
  }

  isControl(id: number): boolean {
    return (this.data.flags[id] & CONTROL) !== 0;
  }

  isEndOfGeneration(id: number): boolean {
    return (this.data.flags[id] & EOG) !== 0;
  }
}
