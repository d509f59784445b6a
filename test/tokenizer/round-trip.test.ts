/**
 * Text survives encode then decode. SentencePiece with byte fallback and byte-level BPE can spell
 * any text, so nothing may be lost except what UTF-8 cannot carry (lone surrogates become U+FFFD).
 */
import { describe, expect, it } from 'vitest';
import { toWellFormed } from '../../engine/tokenizer/utf8.ts';
import { BPE_VARIANTS } from '../../scripts/fixtures/gpt2-bpe-model.ts';
import { TOKENIZER_TEXTS } from '../../scripts/fixtures/tokenizer-texts.ts';
import { gpt2Tokenizer, modelTokenizer } from './load.ts';

const EXTRA = ['a'.repeat(300), 'x y  z\t\t\n\r\n\u00a0\u2028end', '🏳️‍🌈🏴‍☠️ 𓀀 𝄞 \u0000 \u0007 \u007f \u0085'];
const TEXTS = [...TOKENIZER_TEXTS, ...EXTRA];
const expected = (t: string) => toWellFormed(t);

describe.each(['stories260K.gguf', 'llama-2-tiny-random.gguf'])('SentencePiece round trip: %s', (file) => {
  it('decode(encode(text)) without BOS gives the text back (the added space prefix is stripped)', async () => {
    const tok = await modelTokenizer(file);
    const wrong = TEXTS.filter((t) => tok.decode(tok.encode(t, { addBos: false })) !== expected(t));
    expect(wrong).toEqual([]);
  });

  it('with BOS, decoding keeps the space prefix, as llama.cpp does', async () => {
    const tok = await modelTokenizer(file);
    const wrong = TEXTS.filter((t) => t !== '' && tok.decode(tok.encode(t)) !== ` ${expected(t)}`);
    expect(wrong).toEqual([]);
  });

  it('streaming the encoded text gives it back after the space prefix', async () => {
    const tok = await modelTokenizer(file);
    const wrong = TEXTS.filter((t) => {
      const d = tok.streamDecoder();
      const out = tok.encode(t).map((id) => d.push(id)).join('') + d.flush();
      return out !== (t === '' ? '' : ` ${expected(t)}`);
    });
    expect(wrong).toEqual([]);
  });
});

describe('byte-level BPE round trip', () => {
  it.each(BPE_VARIANTS.map((v) => v.pre))('pre-tokenizer %s loses no byte', async (pre) => {
    const tok = await gpt2Tokenizer(pre);
    const wrong = TEXTS.filter((t) => {
      const d = tok.streamDecoder();
      const out = tok.encode(t, { addBos: false }).map((id) => d.push(id)).join('') + d.flush();
      return out !== expected(t);
    });
    expect(wrong).toEqual([]);
  });

  it('decode gives the text back where llama.cpp does not clean up spaces (qwen2)', async () => {
    const tok = await gpt2Tokenizer('qwen2', false);
    const wrong = TEXTS.filter((t) => tok.decode(tok.encode(t)) !== expected(t));
    expect(wrong).toEqual([]);
  });

  it('decode cleans up spaces before punctuation where llama.cpp does (gpt-2)', async () => {
    const tok = await gpt2Tokenizer('gpt-2');
    expect(tok.decode(tok.encode("Hello , world ! It ' s ok . I 'm here , aren 't you ?"))).toBe("Hello, world! It's ok. I'm here, aren 't you?");
  });
});
