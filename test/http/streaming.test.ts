/** The exact SSE wire format, read with fetch: headers, chunk shapes, ids, finish_reason, [DONE]. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { bearer, chatBody, postJson, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  key = h.key('scale', { paid: true });
});
afterAll(() => h.close());

interface Chunk {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: { index: number; delta: { role?: string; content?: string }; logprobs: null | { content: { token: string; logprob: number; bytes: number[]; top_logprobs: [] }[] }; finish_reason: string | null }[];
  usage?: null | { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** The raw body and its events, checking each is one `data:` line followed by a blank line. */
async function readEvents(res: Response): Promise<{ raw: string; events: string[]; arrivals: number }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let raw = '';
  let arrivals = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    arrivals++;
    raw += decoder.decode(value, { stream: true });
  }
  expect(raw.endsWith('\n\n')).toBe(true);
  const events = raw.slice(0, -2).split('\n\n');
  for (const e of events) expect(e).toMatch(/^data: [^\n]+$/);
  return { raw, events: events.map((e) => e.slice('data: '.length)), arrivals };
}

describe('streamed chat completions on the wire', () => {
  it('sends SSE headers and chat.completion.chunk events ending in [DONE]', async () => {
    const res = await postJson(`${h.baseURL}/chat/completions`, chatBody({ model: 'gpt-4o-mini-2024-07-18', max_tokens: 10, temperature: 0, stream: true }), { ...bearer(key), 'x-request-id': 'sse-1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('connection')).toBe('keep-alive');
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(res.headers.get('x-request-id')).toBe('sse-1');
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('2000');
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('1999');

    const { events, arrivals } = await readEvents(res);
    expect(events[events.length - 1]).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0].id).toMatch(/^chatcmpl-/);
    for (const c of chunks) {
      expect(c.object).toBe('chat.completion.chunk');
      expect(c.model).toBe('gpt-4o-mini-2024-07-18');
      expect(c.created).toBe(chunks[0].created);
      expect(c.choices).toHaveLength(1);
      expect(c.choices[0].index).toBe(0);
      expect(c.choices[0].logprobs).toBeNull();
      expect('usage' in c).toBe(false);
    }
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const last = chunks[chunks.length - 1];
    expect(last.choices[0].delta).toEqual({});
    expect(['stop', 'length']).toContain(last.choices[0].finish_reason);
    const middle = chunks.slice(1, -1);
    expect(middle.length).toBeGreaterThan(0);
    for (const c of middle) {
      expect(c.choices[0].finish_reason).toBeNull();
      expect(Object.keys(c.choices[0].delta)).toEqual(['content']);
      expect(c.choices[0].delta.content!.length).toBeGreaterThan(0);
    }
    // Events are written as tokens come, not gathered into one write at the end.
    expect(arrivals).toBeGreaterThan(1);
  });

  it('adds a usage-only chunk before [DONE] with include_usage, and usage: null before it', async () => {
    const res = await postJson(`${h.baseURL}/chat/completions`, chatBody({ max_tokens: 5, stream: true, stream_options: { include_usage: true } }), bearer(key));
    const { events } = await readEvents(res);
    expect(events[events.length - 1]).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk);
    const usage = chunks[chunks.length - 1];
    expect(usage.choices).toEqual([]);
    expect(usage.usage!.total_tokens).toBe(usage.usage!.prompt_tokens + usage.usage!.completion_tokens);
    expect(usage.usage!.completion_tokens).toBeLessThanOrEqual(5);
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull();
    expect(chunks[chunks.length - 2].choices[0].finish_reason).toMatch(/^(stop|length)$/);
  });

  it('streams logprobs of the sampled tokens when asked, with one entry per completion token', async () => {
    const res = await postJson(`${h.baseURL}/chat/completions`, chatBody({ max_tokens: 6, temperature: 0, stream: true, logprobs: true, stream_options: { include_usage: true } }), bearer(key));
    const chunks = (await readEvents(res)).events.slice(0, -1).map((e) => JSON.parse(e) as Chunk);
    const entries = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
    expect(entries.length).toBe(chunks[chunks.length - 1].usage!.completion_tokens);
    for (const e of entries) {
      expect(e.logprob).toBeLessThanOrEqual(0);
      expect(e.top_logprobs).toEqual([]);
      expect(Array.isArray(e.bytes)).toBe(true);
    }
    const whole = await (await postJson(`${h.baseURL}/chat/completions`, chatBody({ max_tokens: 6, temperature: 0, logprobs: true }), bearer(key))).json();
    expect(whole.choices[0].logprobs.content.map((e: { token: string }) => e.token)).toEqual(entries.map((e) => e.token));
  });

  it('answers errors found before the first event with their own status, not a 200 stream', async () => {
    const k = h.key('enterprise', { rpm: 10, monthly: 1, paid: true });
    const first = await postJson(`${h.baseURL}/chat/completions`, chatBody({ max_tokens: 2, stream: true }), bearer(k));
    expect(first.status).toBe(200);
    expect(await first.text()).toContain('[DONE]');
    const res = await postJson(`${h.baseURL}/chat/completions`, chatBody({ max_tokens: 2, stream: true }), bearer(k));
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect((await res.json()).error.code).toBe('insufficient_quota');
  });
});
