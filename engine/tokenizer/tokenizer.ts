/** The Tokenizer the engine uses, over a vocabulary loaded from GGUF metadata. */
import type { GgufMetadata } from '../gguf/parse.ts';
import { HIDDEN_ATTRS } from './attrs.ts';
import { BpeEncoder } from './bpe.ts';
import { checkTokenId, detokenizeBytes, tokenPiece } from './detokenize.ts';
import { partitionSpecial } from './partition.ts';
import { SpmEncoder } from './spm.ts';
import { Utf8StreamDecoder } from './stream-decoder.ts';
import type { StreamDecoder, Tokenizer } from './types.ts';
import { toWellFormed } from './utf8.ts';
import { loadVocab, type Vocab } from './vocab.ts';

const SPM_SPACE = '\u2581';

export class GgufTokenizer implements Tokenizer {
  readonly kind: 'llama' | 'gpt2';
  readonly vocabSize: number;
  readonly bos: number | undefined;
  readonly eos: number | undefined;
  readonly addBos: boolean;
  private readonly vocab: Vocab;
  /** Encodes one fragment of plain text; SentencePiece needs to know whether a special token came before. */
  private readonly encodeText: (text: string, afterSpecial: boolean, out: number[]) => void;
  // ignoreBOM: without it TextDecoder silently drops a leading U+FEFF, which llama.cpp keeps.
  private readonly utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
  /** Token bytes by id, filled on first use, for plain [0] and special [1] decoding (llama.cpp keeps such a cache too). */
  private readonly pieces: [(Uint8Array | undefined)[], (Uint8Array | undefined)[]] = [[], []];

  constructor(metadata: GgufMetadata) {
    const vocab = loadVocab(metadata);
    this.vocab = vocab;
    this.kind = vocab.kind;
    this.vocabSize = vocab.size;
    this.bos = vocab.special.bos;
    this.eos = vocab.special.eos;
    this.addBos = vocab.addBos;
    if (vocab.kind === 'llama') {
      const spm = new SpmEncoder(vocab);
      // SentencePiece adds a space before text that starts the prompt or follows a special token.
      this.encodeText = (text, afterSpecial, out) => {
        const prefixed = vocab.addSpacePrefix && afterSpecial ? ` ${text}` : text;
        spm.encode(prefixed.replaceAll(' ', SPM_SPACE), out);
      };
    } else {
      const bpe = new BpeEncoder(vocab, metadata);
      this.encodeText = (text, _, out) => bpe.encode(text, out);
    }
  }

  /**
   * Same ids as llama.cpp's llama_tokenize(add_special, parse_special). Leaving `addBos` unset is
   * add_special=true: BOS if the model wants it, and EOS for the rare model that wants one appended.
   * `addBos: false` is add_special=false; `addBos: true` forces BOS.
   */
  encode(text: string, opts: { addBos?: boolean; parseSpecial?: boolean } = {}): number[] {
    const out: number[] = [];
    const withBos = opts.addBos ?? this.vocab.addBos;
    if (withBos && this.bos !== undefined) out.push(this.bos);

    let afterSpecial = true;
    for (const f of partitionSpecial(toWellFormed(text), this.vocab, opts.parseSpecial ?? false)) {
      if ('token' in f) out.push(f.token);
      else this.encodeText(f.text, afterSpecial, out);
      afterSpecial = 'token' in f;
    }

    if (opts.addBos !== false && this.vocab.addEos && this.eos !== undefined) out.push(this.eos);
    return out;
  }

  decode(tokens: readonly number[], opts: { special?: boolean } = {}): string {
    const special = opts.special ?? false;
    return this.utf8.decode(detokenizeBytes(this.vocab, tokens, (id) => this.piece(id, special)));
  }

  tokenBytes(id: number): Uint8Array {
    return this.piece(id, false).slice(); // a copy: callers may write to it, the cache must not change
  }

  tokenText(id: number): string {
    checkTokenId(this.vocab, id);
    return this.vocab.texts[id];
  }

  isEndOfGeneration(id: number): boolean {
    return this.vocab.eog.has(id);
  }

  /** Control and unknown tokens: the ones decoding leaves out unless asked for special text. */
  isControl(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < this.vocabSize && (this.vocab.attrs[id] & HIDDEN_ATTRS) !== 0;
  }

  streamDecoder(): StreamDecoder {
    return new Utf8StreamDecoder((id) => this.piece(id, false));
  }

  private piece(id: number, special: boolean): Uint8Array {
    const cache = this.pieces[special ? 1 : 0];
    return (Number.isInteger(id) ? cache[id] : undefined) ?? (cache[id] = tokenPiece(this.vocab, id, special));
  }
}
