/** The character bound on prompts is sound on real vocabularies; the JSON depth scan reads strings right. */
import { describe, expect, it } from 'vitest';
import { findDepthExcess } from '../../protocol/json-depth.ts';
import { renderChat, type ChatMessage } from '../../engine/chat/index.ts';
import { turnsToDrop, type ConversationTurn } from '../../protocol/conversations.ts';
import { historyWithinBound, maxTokenChars, promptCharLimit } from '../../protocol/request-limits.ts';
import { rng } from '../helpers/random.ts';
import { gpt2Tokenizer, modelTokenizer } from '../tokenizer/load.ts';

describe('maxTokenChars', () => {
  for (const file of ['stories260K.gguf', 'TinyStories-656K-Q8_0.gguf', 'llama-2-tiny-random.gguf']) {
    it(`no prompt of ${file} gets fewer tokens than its characters / maxTokenChars`, async () => {
      const t = await modelTokenizer(file);
      const L = maxTokenChars(t);
      // Worst cases first: the vocabulary's own longest pieces, repeated; then random mixes of pieces and characters.
      const pieces = Array.from({ length: t.vocabSize }, (_, id) => new TextDecoder().decode(t.tokenBytes(id))).filter((p) => p.length > 0);
      pieces.sort((a, b) => b.length - a.length);
      const texts = pieces.slice(0, 20).map((p) => p.repeat(50));
      const rand = rng(11);
      for (let i = 0; i < 50; i++) {
        let s = '';
        for (let j = 0; j < 200; j++) s += rand() < 0.8 ? pieces[Math.floor(rand() * pieces.length)] : String.fromCodePoint(32 + Math.floor(rand() * 0x3000));
        texts.push(s);
      }
      for (const text of texts) expect(t.encode(text, { addBos: false }).length * L).toBeGreaterThanOrEqual(text.length);
    });
  }

  it('holds for a byte-level BPE vocabulary', async () => {
    const t = await gpt2Tokenizer('default');
    const L = maxTokenChars(t);
    for (const text of ['hello world '.repeat(100), '🙂'.repeat(300), '          x'.repeat(50)]) {
      expect(t.encode(text, { addBos: false }).length * L).toBeGreaterThanOrEqual(text.length);
    }
  });
});

describe('findDepthExcess', () => {
  it('counts nesting outside strings only', () => {
    expect(findDepthExcess('[[[]]]', 3)).toBeUndefined();
    expect(findDepthExcess('[[[[]]]]', 3)).toEqual({ limit: 3, offset: 3 });
    expect(findDepthExcess('{"a":{"b":[1]}}', 2)).toEqual({ limit: 2, offset: 10 });
    expect(findDepthExcess('["[[[[[[", "\\"[[[[[["]', 1)).toBeUndefined();
    // An escaped backslash ends the escape, so the quote after it closes the string.
    expect(findDepthExcess('["\\\\", [[]]]', 2)).toEqual({ limit: 2, offset: 8 });
  });
});

describe('historyWithinBound', () => {
  it('leaves out only turns that could not fit, so the token search keeps the same turns', async () => {
    const t = await modelTokenizer('stories260K.gguf');
    const context = 256;
    const rand = rng(5);
    const words = ['Lily', 'ball', 'the', 'happy', 'a', 'park', 'ran', 'and', 'she', 'dog'];
    const text = (n: number) => Array.from({ length: n }, () => words[Math.floor(rand() * words.length)]).join(' ');
    const head: ChatMessage[] = [{ role: 'system', content: 'You are a helpful, concise assistant.' }];
    let trimmedSome = 0;
    for (let trial = 0; trial < 30; trial++) {
      const history: ConversationTurn[] = [];
      const turns = 2 + Math.floor(rand() * 40);
      for (let i = 0; i < turns; i++) history.push({ role: i % 2 === 0 ? 'user' : 'assistant', content: text(1 + Math.floor(rand() * 60)) });
      const messages: ChatMessage[] = [...head, { role: 'user', content: text(5) }];
      const size = { contextLength: context, tokenizer: t, hasTemplate: false, messages, param: 'prompt' };
      const kept = historyWithinBound(size, history);
      expect(history.slice(history.length - kept.length)).toEqual(kept);
      if (kept.length > 0) expect(kept[0].role === 'user' || kept.length === history.length).toBe(true);
      if (kept.length < history.length) trimmedSome++;
      const tokens = (h: readonly ConversationTurn[]) => (d: number) => renderChat({ tokenizer: t }, [...head, ...h.slice(d), ...messages.slice(1)]).tokens.length;
      const fromAll = history.length - turnsToDrop(history, tokens(history), 16, context);
      const fromKept = kept.length === 0 ? 0 : kept.length - turnsToDrop(kept, tokens(kept), 16, context);
      expect(fromKept).toBe(fromAll);
    }
    expect(trimmedSome).toBeGreaterThan(0);
    expect(promptCharLimit(context, t)).toBe(context * maxTokenChars(t));
  });
});
