/** The official openai client against a running server on the tiny model: only baseURL and apiKey changed. */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { bearer, postJson, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let key: string;
let client: OpenAI;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  key = h.key('professional', { paid: true });
  client = new OpenAI({ baseURL: h.baseURL, apiKey: key });
});
afterAll(() => h.close());

const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: 'You tell stories.' },
  { role: 'user', content: 'Once upon a time' },
];

describe('chat completions through the openai client', () => {
  it('returns a chat.completion with the requested model name and consistent usage', async () => {
    const r = await client.chat.completions.create({ model: 'gpt-4o', messages, max_tokens: 12, temperature: 0 });
    expect(r.id).toMatch(/^chatcmpl-[A-Za-z0-9]{24}$/);
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe('gpt-4o');
    expect(Number.isInteger(r.created)).toBe(true);
    expect(r.choices).toHaveLength(1);
    const [c] = r.choices;
    expect(c.index).toBe(0);
    expect(c.message.role).toBe('assistant');
    expect(typeof c.message.content).toBe('string');
    expect(['stop', 'length']).toContain(c.finish_reason);
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    expect(r.usage!.completion_tokens).toBeLessThanOrEqual(12);
    expect(r.usage!.prompt_tokens).toBeGreaterThan(10);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + r.usage!.completion_tokens);
    if (c.finish_reason === 'length') expect(r.usage!.completion_tokens).toBe(12);
  });

  it('streams text the stream helper reassembles into the same greedy answer', async () => {
    const params = { model: 'svc-chat', messages, max_tokens: 16, temperature: 0 } as const;
    const whole = await client.chat.completions.create(params);
    const stream = client.chat.completions.stream(params);
    const pieces: string[] = [];
    stream.on('content', (delta) => pieces.push(delta));
    const final = await stream.finalChatCompletion();
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe(final.choices[0].message.content);
    expect(final.choices[0].message.content).toBe(whole.choices[0].message.content);
    expect(final.choices[0].finish_reason).toBe(whole.choices[0].finish_reason);
    expect(final.model).toBe('svc-chat');
  });

  it('adds a usage chunk with include_usage', async () => {
    const stream = await client.chat.completions.create({ model: 'summarise', messages, max_tokens: 6, temperature: 0, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage!.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('honours stop, seed and content parts', async () => {
    const r = await client.chat.completions.create({
      model: 'svc-chat',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Once upon' }, { type: 'text', text: 'a time' }] }],
      max_tokens: 40,
      temperature: 0.9,
      seed: 42,
      stop: ['.'],
    });
    expect(r.choices[0].message.content).not.toContain('.');
    const again = await client.chat.completions.create({
      model: 'svc-chat',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Once upon' }, { type: 'text', text: 'a time' }] }],
      max_tokens: 40,
      temperature: 0.9,
      seed: 42,
      stop: ['.'],
    });
    expect(again.choices[0].message.content).toBe(r.choices[0].message.content);
  });
});

describe('POST /v1/infer and usage', () => {
  it('answers with id, specialist, result, tokens_used and latency_ms, and counts every completed request', async () => {
    const k = h.key('starter', { paid: true });
    const c = new OpenAI({ baseURL: h.baseURL, apiKey: k });
    const a = await c.chat.completions.create({ model: 'svc-chat', messages, max_tokens: 4 });
    const b = await c.chat.completions.create({ model: 'gpt-3.5-turbo-0125', messages, max_tokens: 4 });
    expect(b.model).toBe('gpt-3.5-turbo-0125');
    const res = await postJson(`${h.baseURL}/infer`, { specialist: 'summarise', prompt: 'Once upon a time there was a cat.', max_tokens: 5, temperature: 0 }, bearer(k));
    expect(res.status).toBe(200);
    const inf = await res.json();
    expect(inf).toEqual({ id: expect.stringMatching(/^inf_/), specialist: 'summarise', result: expect.any(String), tokens_used: expect.any(Number), latency_ms: expect.any(Number), finish_reason: expect.stringMatching(/^(stop|length)$/) });
    expect(Number.isInteger(inf.latency_ms) && inf.latency_ms >= 0).toBe(true);

    const usage = await (await fetch(`${h.baseURL}/usage`, { headers: bearer(k) })).json();
    expect(usage.requests_used).toBe(3);
    expect(usage.by_specialist).toMatchObject({ chat: 2, summarise: 1 });
    expect(usage.tokens_used).toBe(a.usage!.total_tokens + b.usage!.total_tokens + inf.tokens_used);
  });
});
