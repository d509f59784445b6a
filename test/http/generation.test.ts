/** What happens around generation: context limits, exact counting, disconnects, engine failures. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EngineInputError, type TextEngine } from '../../engine/types.ts';
import { renderChat } from '../../engine/chat/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { bearer, chatBody, postJson, startServer, type Harness } from './helpers/harness.ts';
import { watched } from './helpers/watched.ts';
import { loadSpecialists } from '../../adapters/config-node.ts';

let engine: TextEngine;
beforeAll(async () => {
  engine = await testEngine();
});

async function withServer(e: TextEngine, fn: (h: Harness) => Promise<void>): Promise<void> {
  const h = await startServer({ engine: e });
  try {
    await fn(h);
  } finally {
    await h.close();
  }
}

const url = (h: Harness) => `${h.baseURL}/chat/completions`;
const usageOf = async (h: Harness, key: string) => (await fetch(`${h.baseURL}/usage`, { headers: bearer(key) })).json();

/** A user message whose rendered prompt takes exactly `target` tokens (or as close as words allow). */
function contentFor(target: number): string {
  const chat = loadSpecialists().get('chat')!;
  const tokens = (n: number) =>
    renderChat({ tokenizer: engine.tokenizer, chatTemplate: engine.info.chatTemplate }, [{ role: 'system', content: chat.systemPrompt }, { role: 'user', content: 'the cat sat. '.repeat(n) }]).tokens.length;
  let lo = 0;
  let hi = 1;
  while (tokens(hi) < target) hi *= 2;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (tokens(mid) <= target) lo = mid;
    else hi = mid - 1;
  }
  return 'the cat sat. '.repeat(lo);
}

describe('the context window', () => {
  it('400s a prompt that leaves no room, naming messages', async () => {
    await withServer(engine, async (h) => {
      const key = h.key('scale', { paid: true });
      const res = await postJson(url(h), chatBody({ messages: [{ role: 'user', content: 'Once upon a time '.repeat(engine.info.contextLength) }] }), bearer(key));
      expect(res.status).toBe(400);
      const { error } = await res.json();
      expect(error).toMatchObject({ type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' });
      expect(error.message).toContain(`maximum context length is ${engine.info.contextLength} tokens`);
      expect((await usageOf(h, key)).requests_used).toBe(0);
    });
  });

  it('clamps max_tokens to what the context leaves, ending with finish_reason length', async () => {
    // A small window keeps the near-full prompt quick to prefill on a CPU adapter.
    const engine = await testEngine('stories260K.gguf', { contextLength: 256 });
    await withServer(engine, async (h) => {
      const key = h.key('scale', { paid: true });
      const content = contentFor(engine.info.contextLength - 3);
      const res = await postJson(url(h), chatBody({ messages: [{ role: 'user', content }], max_tokens: 100, temperature: 0 }), bearer(key));
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.usage.total_tokens).toBeLessThanOrEqual(engine.info.contextLength);
      expect(body.usage.completion_tokens).toBeLessThanOrEqual(engine.info.contextLength - body.usage.prompt_tokens);
      if (body.choices[0].finish_reason === 'length') expect(body.usage.total_tokens).toBe(engine.info.contextLength);
    });
  });
});

describe('counting', () => {
  it('admits exactly the monthly allowance under concurrency', async () => {
    await withServer(engine, async (h) => {
      const key = h.key('enterprise', { rpm: 100, monthly: 3, paid: true });
      const results = await Promise.all(Array.from({ length: 6 }, () => postJson(url(h), chatBody({ max_tokens: 3 }), bearer(key))));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
      await Promise.all(results.map((r) => r.text()));
      const usage = await usageOf(h, key);
      expect(usage.requests_used).toBe(3);
      expect(usage.by_specialist.chat).toBe(3);
    });
  });

  it('stops the generation of a client that disconnects, and counts the work done', async () => {
    const w = watched(engine);
    await withServer(w, async (h) => {
      const key = h.key('scale', { paid: true });
      const res = await postJson(url(h), chatBody({ max_tokens: 2000, stream: true }), bearer(key));
      const reader = res.body!.getReader();
      // Wait for the first content event, then go away.
      let seen = '';
      while (!/"content":"[^"]/.test(seen)) seen += new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      const signal = w.calls[0].signal!;
      for (let i = 0; i < 100 && !signal.aborted; i++) await new Promise((r) => setTimeout(r, 50));
      expect(signal.aborted).toBe(true);
      let usage = await usageOf(h, key);
      for (let i = 0; i < 100 && usage.requests_used === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        usage = await usageOf(h, key);
      }
      expect(usage.requests_used).toBe(1);
      expect(usage.tokens_used).toBeGreaterThan(0);
    });
  });

  it('does not touch the engine for requests that fail before the model', async () => {
    const w = watched(engine);
    await withServer(w, async (h) => {
      const key = h.key('solo');
      await postJson(url(h), chatBody({ model: 'svc-code' }), bearer(key));
      await postJson(url(h), chatBody({ max_tokens: 0 }), bearer(key));
      await postJson(url(h), chatBody(), bearer('svc_live_bad'));
      expect(w.calls).toHaveLength(0);
    });
  });
});

describe('engine failures', () => {
  it('turns an EngineInputError into a 400 naming the API parameter', async () => {
    const failing: TextEngine = { ...watched(engine), generate: () => { throw new EngineInputError('top_p too small for this model', 'topP'); } };
    await withServer(failing, async (h) => {
      const key = h.key('scale', { paid: true });
      const res = await postJson(url(h), chatBody({ top_p: 0.5 }), bearer(key));
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error', param: 'top_p', message: 'top_p too small for this model' });
      expect((await usageOf(h, key)).requests_used).toBe(0);
    });
  });

  it('turns any other failure into a generic 500, with the detail only in the log', async () => {
    const failing: TextEngine = { ...watched(engine), generate: () => { throw new Error('device lost: secret detail'); } };
    await withServer(failing, async (h) => {
      const key = h.key('scale', { paid: true });
      const res = await postJson(url(h), chatBody(), { ...bearer(key), 'x-request-id': 'boom-1' });
      expect(res.status).toBe(500);
      const { error } = await res.json();
      expect(error).toMatchObject({ type: 'server_error', code: 'server_error' });
      expect(error.message).not.toContain('secret');
      const line = h.logs.map((l) => JSON.parse(l)).find((l) => l.reqId === 'boom-1' && l.err);
      expect(line.err.message).toBe('device lost: secret detail');
      // The stream form says so in an error event before any 200 is sent.
      const s = await postJson(url(h), chatBody({ stream: true }), bearer(key));
      expect(s.status).toBe(500);
      expect((await usageOf(h, key)).requests_used).toBe(0);
    });
  });
});
