/** Streaming decode: a character split over byte-fallback tokens comes out whole, exactly once. */
import { describe, expect, it } from 'vitest';
import type { Tokenizer } from '../../engine/tokenizer/index.ts';
import { gpt2Tokenizer, modelTokenizer } from './load.ts';

const streamAll = (tok: Tokenizer, ids: readonly number[]) => {
  const d = tok.streamDecoder();
  return { pieces: ids.map((id) => d.push(id)), tail: d.flush() };
};

describe('stream decoder on llama-2-tiny-random (byte fallback)', () => {
  it('emits a four-byte emoji once, when its last byte token arrives', async () => {
    const tok = await modelTokenizer('llama-2-tiny-random.gguf');
    const ids = tok.encode('😀', { addBos: false });
    // "▁" then <0xF0> <0x9F> <0x98> <0x80>: the emoji has no token of its own.
    expect(ids.map((id) => tok.tokenText(id))).toEqual(['▁', '<0xF0>', '<0x9F>', '<0x98>', '<0x80>']);
    expect(streamAll(tok, ids)).toEqual({ pieces: [' ', '', '', '', '😀'], tail: '' });
  });

  it('keeps text before and after a split character in order, and hides control tokens', async () => {
    const tok = await modelTokenizer('llama-2-tiny-random.gguf');
    const ids = tok.encode('I ❤️ tokens 🎉');
    const { pieces, tail } = streamAll(tok, [...ids, tok.eos!]);
    expect(pieces[0]).toBe(''); // BOS
    expect(pieces.at(-1)).toBe(''); // EOS
    expect(pieces.join('') + tail).toBe(' I ❤️ tokens 🎉');
    expect(pieces.filter((p) => p.includes('🎉'))).toHaveLength(1);
    expect(pieces.some((p) => p.includes('\ufffd'))).toBe(false);
  });

  it('flushes an unfinished character as one U+FFFD and then starts clean', async () => {
    const tok = await modelTokenizer('llama-2-tiny-random.gguf');
    const [, f0, x9f] = tok.encode('😀', { addBos: false });
    const d = tok.streamDecoder();
    expect(d.push(f0) + d.push(x9f)).toBe('');
    expect(d.flush()).toBe('\ufffd');
    expect(d.push(tok.encode('a', { addBos: false })[0])).toBe(' a');
    expect(d.flush()).toBe('');
  });

  it('replaces a stray continuation byte at once instead of holding it', async () => {
    const tok = await modelTokenizer('llama-2-tiny-random.gguf');
    const [, , x9f] = tok.encode('😀', { addBos: false });
    const d = tok.streamDecoder();
    expect(d.push(x9f)).toBe('\ufffd');
  });
});

describe('stream decoder on byte-level BPE', () => {
  it('holds back bytes of a character split across BPE tokens', async () => {
    const tok = await gpt2Tokenizer('gpt-2');
    const ids = tok.encode('🎉');
    expect(ids.length).toBeGreaterThan(1);
    const { pieces, tail } = streamAll(tok, ids);
    expect(pieces.slice(0, -1).every((p) => p === '')).toBe(true);
    expect(pieces.at(-1)).toBe('🎉');
    expect(tail).toBe('');
  });
});
