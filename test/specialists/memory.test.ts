/**
 * chat's memory on /v1/infer: a conversation's turns reach the model on the next request, survive a
 * server restart on the same data folder, belong to one key, and give way (oldest first) to the answer
 * when the context window is small. Chat completions stay stateless.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { bearer, postJson, startServer } from '../http/helpers/harness.ts';
import { watched } from '../http/helpers/watched.ts';
import { infer } from './helpers.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('conversation memory', () => {
  it('carries the turns into the next prompt, across a restart, per key', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-memory-'));
    dirs.push(dataDir);
    const engine = watched(await testEngine());
    let h = await startServer({ engine, dataDir });
    const key = h.key('solo', { paid: true });
    const other = h.key('solo', { paid: true });
    const turn = (hh: typeof h, k: string, prompt: string) => infer(hh, k, { specialist: 'chat', prompt, conversation_id: 'trip-42', max_tokens: 6, temperature: 0 });

    const first = await turn(h, key, 'My cat is called Biscuit.');
    expect(first.conversation_id).toBe('trip-42');
    expect(first.history_turns).toBe(0);
    const second = await turn(h, key, 'What is my cat called?');
    expect(second.history_turns).toBe(2);
    expect(engine.prompts()[1]).toContain(`### User:\nMy cat is called Biscuit.\n\n### Assistant:\n${first.result}\n\n### User:\nWhat is my cat called?`);
    await h.close();

    // A new server on the same data folder: the conversation is still there.
    h = await startServer({ engine, dataDir });
    try {
      const third = await turn(h, key, 'And the dog?');
      expect(third.history_turns).toBe(4);
      expect(engine.prompts()[2]).toContain(`My cat is called Biscuit.\n\n### Assistant:\n${first.result}\n\n### User:\nWhat is my cat called?\n\n### Assistant:\n${second.result}\n\n### User:\nAnd the dog?`);
      // Another key's conversation of the same name is its own.
      const stranger = await turn(h, other, 'Hello?');
      expect(stranger.history_turns).toBe(0);
      expect(engine.prompts()[3]).not.toContain('Biscuit');
      // Chat completions are stateless, as the provider's are: the field is ignored there.
      await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', conversation_id: 'trip-42', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }, bearer(key));
      expect(engine.prompts()[4]).not.toContain('Biscuit');
    } finally {
      await h.close();
    }
  });

  it('leaves out the oldest turns when the window is small, keeping room for the answer', async () => {
    const engine = watched(await testEngine('stories260K.gguf', { contextLength: 256 }));
    const h = await startServer({ engine });
    try {
      const key = h.key('solo', { paid: true });
      let last = await infer(h, key, { specialist: 'chat', prompt: 'Turn 0: the little dog ran to the park and played.', conversation_id: 'long', max_tokens: 4 });
      for (let i = 1; i < 8; i++) {
        last = await infer(h, key, { specialist: 'chat', prompt: `Turn ${i}: the little dog ran to the park and played.`, conversation_id: 'long', max_tokens: 4 });
      }
      const call = engine.calls.at(-1)!;
      // Room for max_tokens was kept beside the history (the reserve is max_tokens, at most half the window).
      expect(call.tokens!.length + 4).toBeLessThanOrEqual(256);
      expect(last.history_turns).toBeGreaterThan(0);
      expect(last.history_turns).toBeLessThan(14);
      expect(last.history_turns! % 2).toBe(0);
      const prompt = engine.prompts().at(-1)!;
      expect(prompt).not.toContain('Turn 0:');
      expect(prompt).toContain('Turn 6:');
      expect(prompt).toContain('Turn 7:');
      // What was left out is the oldest, in one piece: the kept turns are the latest ones.
      const kept = [...prompt.matchAll(/Turn (\d+):/g)].map((m) => Number(m[1]));
      expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => 8 - kept.length + i));
    } finally {
      await h.close();
    }
  });
});
