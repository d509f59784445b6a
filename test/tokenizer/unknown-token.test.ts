/**
 * TinyStories-656K has no byte tokens. llama.cpp aborts on a character its vocabulary lacks, so there
 * is no reference here: such a character must become the unknown token, and the rest stay intact.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Tokenizer } from '../../engine/tokenizer/index.ts';
import { modelTokenizer } from './load.ts';

const TEXTS = ['héllo wörld', 'a 😀 smile', 'the 日本 cat', 'señor <tag> / (x)', '👨‍👩‍👧 family', 'tab\there', 'a\udc00b', 'ok'];

describe('unknown token on TinyStories-656K', () => {
  let tok: Tokenizer;
  /** Characters the vocabulary can spell: those of its normal tokens (a space is written U+2581). */
  let alphabet: Set<string>;
  const known = (ch: string) => alphabet.has(ch === ' ' ? '\u2581' : ch);

  beforeAll(async () => {
    tok = await modelTokenizer('TinyStories-656K-Q8_0.gguf');
    alphabet = new Set();
    for (let id = 0; id < tok.vocabSize; id++) if (!tok.isControl(id)) for (const ch of tok.tokenText(id)) alphabet.add(ch);
  });

  it('has an unknown token, and no byte tokens to fall back on', () => {
    expect(tok.tokenText(0)).toBe('<unk>');
    expect(tok.isControl(0)).toBe(true);
    expect(alphabet.has('é')).toBe(false);
    for (let id = 0; id < tok.vocabSize; id++) expect(tok.tokenText(id)).not.toMatch(/^<0x[0-9A-F]{2}>$/);
  });

  it.each(TEXTS)('turns each character outside the vocabulary into one <unk> and keeps the rest: %j', (text) => {
    const chars = [...text.replace(/[\ud800-\udfff]/gu, '\ufffd')];
    const ids = tok.encode(text, { addBos: false });
    expect(ids.filter((id) => id === 0)).toHaveLength(chars.filter((ch) => !known(ch)).length);
    // Decoding hides <unk> (llama.cpp never shows control or unknown tokens unless asked for special text).
    expect(tok.decode(ids)).toBe(chars.filter(known).join(''));
    expect(tok.decode(ids, { special: true })).toBe(chars.map((ch) => (known(ch) ? ch : '<unk>')).join(''));
  });

  it('round-trips text made only of vocabulary characters', () => {
    const text = 'Once upon a time, there was a little girl named Lily. She was 3 years old!\n"Yes," said Mom.';
    const ids = tok.encode(text, { addBos: false });
    expect(ids).not.toContain(0);
    expect(tok.decode(ids)).toBe(text);
  });
});
