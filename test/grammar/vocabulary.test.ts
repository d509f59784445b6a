/** The vocabulary as xgrammar gets it: what each test model can write, stop tokens, one hand-over per tokenizer. */
import { describe, expect, it } from 'vitest';
import { grammarVocabulary, vocabularyCoverage } from '../../engine/grammar/index.ts';
import { tokenizerOf } from './helpers.ts';

describe('grammar vocabulary', () => {
  it('stories260K and Llama 2 have byte fallback: any text can be written', async () => {
    for (const file of ['stories260K.gguf', 'llama-2-tiny-random.gguf']) {
      const c = vocabularyCoverage(await tokenizerOf(file));
      expect(c.allBytes).toBe(true);
      expect(c.has('{')).toBe(true);
      expect(c.has('€')).toBe(true);
    }
  });

  it('TinyStories-656K writes only these characters: no braces, brackets, backslash or parentheses', async () => {
    const c = vocabularyCoverage(await tokenizerOf('TinyStories-656K-Q8_0.gguf'));
    expect(c.allBytes).toBe(false);
    expect(c.characters).toBe('\n !"$\',-.0123456789:;<>?ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz|');
    for (const ch of '{}[]\\()') expect(c.has(ch)).toBe(false);
  });

  it('stop tokens are the end-of-generation tokens; built once per tokenizer', async () => {
    const t = await tokenizerOf('stories260K.gguf');
    const v = await grammarVocabulary(t);
    expect(v.stopTokens).toEqual([t.eos]);
    expect(v.maskWords).toBe(16);
    expect(await grammarVocabulary(t)).toBe(v);
    expect(await grammarVocabulary(await tokenizerOf('llama-2-tiny-random.gguf'))).not.toBe(v);
  });
});
