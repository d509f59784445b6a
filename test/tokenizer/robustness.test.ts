/** Any input string encodes without throwing, bad ids fail with a clear error, and long prompts are fast. */
import { describe, expect, it } from 'vitest';
import { GgufMetadata, type GgufValue } from '../../engine/gguf/parse.ts';
import { createTokenizer, type Tokenizer } from '../../engine/tokenizer/index.ts';
import { rng } from '../helpers/random.ts';
import { gpt2Tokenizer, modelTokenizer } from './load.ts';
import { garbageTexts } from './random-text.ts';

const tokenizers: [string, () => Promise<Tokenizer>][] = [
  ['stories260K', () => modelTokenizer('stories260K.gguf')],
  ['llama-2-tiny-random', () => modelTokenizer('llama-2-tiny-random.gguf')],
  ['TinyStories-656K', () => modelTokenizer('TinyStories-656K-Q8_0.gguf')],
  ['gpt2 llama-bpe', () => gpt2Tokenizer('llama-bpe')],
  ['gpt2 deepseek-llm', () => gpt2Tokenizer('deepseek-llm', true)],
  ['gpt2 default', () => gpt2Tokenizer('default')],
];

describe.each(tokenizers)('%s never throws on garbage', (_, load) => {
  it('encodes, decodes and streams 300 random strings', async () => {
    const tok = await load();
    for (const s of garbageTexts(7, 300)) {
      for (const parseSpecial of [false, true]) {
        const ids = tok.encode(s, { parseSpecial });
        expect(ids.every((id) => Number.isInteger(id) && id >= 0 && id < tok.vocabSize)).toBe(true);
        expect(typeof tok.decode(ids, { special: parseSpecial })).toBe('string');
        const d = tok.streamDecoder();
        for (const id of ids) d.push(id);
        d.flush();
      }
    }
  });

  it('treats lone surrogates as U+FFFD, like text that reached llama.cpp through UTF-8', async () => {
    const tok = await load();
    expect(tok.encode('a\ud800b')).toEqual(tok.encode('a\ufffdb'));
    expect(tok.encode('\udc00')).toEqual(tok.encode('\ufffd'));
    expect(tok.encode('x\ud83d')).toEqual(tok.encode('x\ufffd'));
  });
});

describe('token ids outside the vocabulary', () => {
  it('are refused with an error naming the id and the range', async () => {
    const tok = await modelTokenizer('stories260K.gguf');
    expect(() => tok.decode([1, 512])).toThrow('token id 512 is outside the vocabulary (0..511)');
    expect(() => tok.tokenBytes(-1)).toThrow('token id -1 is outside the vocabulary');
    expect(() => tok.tokenText(1.5)).toThrow('token id 1.5 is outside the vocabulary');
    expect(() => tok.streamDecoder().push(9999)).toThrow(RangeError);
    expect(tok.isControl(-1)).toBe(false);
    expect(tok.isEndOfGeneration(9999)).toBe(false);
  });
});

describe('unsupported vocabularies', () => {
  const metadata = (entries: Record<string, GgufValue>) => new GgufMetadata(new Map(Object.entries(entries)));

  it('names an unsupported tokenizer model', () => {
    expect(() => createTokenizer(metadata({ 'tokenizer.ggml.model': 'bert', 'tokenizer.ggml.tokens': ['a'] }))).toThrow(
      'unsupported tokenizer model "bert" (tokenizer.ggml.model)',
    );
  });

  it('names an unsupported pre-tokenizer', () => {
    const md = metadata({ 'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': 'klingon', 'tokenizer.ggml.tokens': ['a'], 'tokenizer.ggml.merges': [] });
    expect(() => createTokenizer(md)).toThrow('unsupported BPE pre-tokenizer "klingon" (tokenizer.ggml.pre)');
  });

  it('names missing vocabulary keys', () => {
    expect(() => createTokenizer(metadata({}))).toThrow('"tokenizer.ggml.model" is missing');
    expect(() => createTokenizer(metadata({ 'tokenizer.ggml.model': 'llama' }))).toThrow('"tokenizer.ggml.tokens" is missing');
    expect(() => createTokenizer(metadata({ 'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.tokens': ['a'] }))).toThrow(
      '"tokenizer.ggml.merges" is missing',
    );
  });

  it('names a scores array shorter than the vocabulary', () => {
    const md = metadata({ 'tokenizer.ggml.model': 'llama', 'tokenizer.ggml.tokens': ['a', 'b'], 'tokenizer.ggml.scores': new Float32Array(1) });
    expect(() => createTokenizer(md)).toThrow('"tokenizer.ggml.scores" has 1 entries but the vocabulary has 2 tokens');
  });
});

describe('speed', () => {
  const prompt = (() => {
    const r = rng(3);
    const words = ['the', 'little', 'girl', 'named', 'Lily', 'played', 'outside,', 'café', '日本語', '😀', '1234567', 'don\'t', '\n\n', '  ', 'function(x)', '{ return; }'];
    let s = '';
    while (s.length < 10_000) s += words[Math.floor(r() * words.length)] + ' ';
    return s;
  })();

  it.each([
    ['llama-2-tiny-random (SentencePiece, 32k vocab)', () => modelTokenizer('llama-2-tiny-random.gguf')],
    ['gpt2 llama-bpe (BPE, 50k merges)', () => gpt2Tokenizer('llama-bpe')],
    ['gpt2 deepseek-llm (regex pre-tokenizer)', () => gpt2Tokenizer('deepseek-llm', true)],
  ] as const)('encodes a 10 KB prompt in well under a second: %s', async (_, load) => {
    const tok = await load();
    tok.encode('warm up the code paths');
    const times: number[] = [];
    for (let run = 0; run < 3; run++) {
      const t0 = performance.now();
      expect(tok.encode(prompt).length).toBeGreaterThan(1000);
      times.push(performance.now() - t0);
    }
    // Tens of milliseconds on a developer machine; the median and the bound leave room for a busy
    // two-core CI box, while a merge loop without a priority queue would take seconds.
    expect(times.sort((a, b) => a - b)[1]).toBeLessThan(250);
  });
});
