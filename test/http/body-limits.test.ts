/**
 * Request bodies cannot buy unbounded main-thread work: a 1 MB prompt and a 100000-deep JSON body are
 * refused in milliseconds with a 400 that names what was wrong, and the server answers normally after.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../protocol/json-depth.ts';
import { MAX_MESSAGES, MAX_STOP_CHARS, MAX_TOOLS, promptCharLimit } from '../../protocol/request-limits.ts';
import { bearer, chatBody, postJson, realTestEngine, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startServer();
  key = h.key('professional', { paid: true });
  // The engine loads on the first request that reaches it; timings below are of refusals alone.
  const warm = await postJson(`${h.baseURL}/infer`, { specialist: 'chat', prompt: 'Hi', max_tokens: 1 }, bearer(key));
  expect(warm.status).toBe(200);
}, 120_000);
afterAll(() => h.close());

async function timed(send: () => Promise<Response>): Promise<{ res: Response; ms: number; body: { error: { message: string; type: string; param: string | null; code: string | null } } }> {
  const t0 = performance.now();
  const res = await send();
  const body = await res.json();
  return { res, ms: performance.now() - t0, body };
}

async function stillHealthy(): Promise<void> {
  expect((await fetch(`${h.url}/health`)).status).toBe(200);
  const ok = await postJson(`${h.baseURL}/infer`, { specialist: 'chat', prompt: 'Once upon a time', max_tokens: 2 }, bearer(key));
  expect(ok.status).toBe(200);
}

const MEGABYTE_PROMPT = 'Once upon a time there was a little girl named Lily. '.repeat(20_000).slice(0, 1_000_000);

describe('prompt size against the context window', () => {
  it('refuses a 1 MB prompt on /v1/infer in well under a second, naming prompt', async () => {
    const { res, ms, body } = await timed(() => postJson(`${h.baseURL}/infer`, { specialist: 'chat', prompt: MEGABYTE_PROMPT }, bearer(key)));
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: 'prompt', code: 'context_length_exceeded' });
    expect(body.error.message).toMatch(/cannot fit/);
    // Tokenizing this prompt takes about 2 s on this machine; the refusal must come from counting characters.
    expect(ms).toBeLessThan(1000);
    await stillHealthy();
  });

  it('refuses 1 MB of messages on chat completions, naming messages', async () => {
    const messages = [{ role: 'system', content: 'Be brief.' }, ...Array.from({ length: 4 }, () => ({ role: 'user', content: MEGABYTE_PROMPT.slice(0, 250_000) }))];
    const { res, ms, body } = await timed(() => postJson(`${h.baseURL}/chat/completions`, chatBody({ messages }), bearer(key)));
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ param: 'messages', code: 'context_length_exceeded' });
    expect(ms).toBeLessThan(1000);
  });

  it('counts what the chat format adds: tool descriptions too long for the window are refused before tokenizing', async () => {
    const engine = await realTestEngine();
    const limit = promptCharLimit(engine.info.contextLength, engine.tokenizer);
    const tools = Array.from({ length: 8 }, (_, i) => ({ type: 'function', function: { name: `f${i}`, description: 'Looks things up. '.repeat(Math.ceil(limit / 100)), parameters: { type: 'object' } } }));
    const { res, body } = await timed(() => postJson(`${h.baseURL}/chat/completions`, chatBody({ messages: [{ role: 'user', content: 'Hi' }], tools }), bearer(key)));
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ param: 'messages', code: 'context_length_exceeded' });
    expect(body.error.message).toMatch(/rendered with the chat format and the tools, the prompt has \d+/);
    await stillHealthy();
  });

  it('is sound: a prompt at the character bound reaches the tokenizer and is judged by its tokens', async () => {
    const engine = await realTestEngine();
    const limit = promptCharLimit(engine.info.contextLength, engine.tokenizer);
    // Within the bound (the chat specialist's system prompt is under 100 characters) the character check
    // lets it through; the prompt is then measured in tokens (and is too long).
    const atBound = 'a'.repeat(limit - 100);
    const res = await postJson(`${h.baseURL}/infer`, { specialist: 'chat', prompt: atBound }, bearer(key));
    const body = await res.json();
    expect(res.status).toBe(400);
    expect(body.error.code).toBe('context_length_exceeded');
    expect(body.error.message).toMatch(/takes \d+ tokens/);
    const over = await (await postJson(`${h.baseURL}/infer`, { specialist: 'chat', prompt: 'a'.repeat(limit + 1) }, bearer(key))).json();
    expect(over.error.message).toMatch(/cannot fit/);
  });
});

describe('JSON nesting', () => {
  it('refuses a 100000-deep body at once with 400 naming the limit, and stays healthy', async () => {
    const deep = '{"model":"svc-chat","messages":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}';
    const { res, ms, body } = await timed(() => fetch(`${h.baseURL}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(key) }, body: deep }));
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: null, code: 'json_too_deep' });
    expect(body.error.message).toContain(`${MAX_JSON_DEPTH} levels`);
    expect(ms).toBeLessThan(1000);
    await stillHealthy();
  });

  it('refuses a deep JSON schema too, but takes one that nests within the limit', async () => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 100; i++) schema = { type: 'object', properties: { a: schema } };
    const tooDeep = await postJson(`${h.baseURL}/chat/completions`, chatBody({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }), bearer(key));
    expect(tooDeep.status).toBe(400);
    expect((await tooDeep.json()).error.code).toBe('json_too_deep');

    // Brackets inside strings are text, not nesting.
    const brackets = '['.repeat(10_000);
    const res = await postJson(`${h.baseURL}/infer`, { specialist: 'chat', prompt: brackets, max_tokens: 1 }, bearer(key));
    expect((await res.json()).error?.code).not.toBe('json_too_deep');
  });
});

describe('JSON carried as text', () => {
  it('gets the same depth limit: a schema string and tool-call arguments', async () => {
    let schema = '{"type":"string"}';
    for (let i = 0; i < 20_000; i++) schema = `{"type":"array","items":${schema}}`;
    const { res, ms, body } = await timed(() => postJson(`${h.baseURL}/chat/completions`, chatBody({ response_format: { type: 'json_object', schema } }), bearer(key)));
    expect(res.status).toBe(400);
    expect(body.error.param).toBe('response_format.schema');
    expect(body.error.message).toContain(`${MAX_JSON_DEPTH} levels`);
    expect(ms).toBeLessThan(1000);

    const args = '['.repeat(100_000) + ']'.repeat(100_000);
    const messages = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: args } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
    ];
    const t = await postJson(`${h.baseURL}/chat/completions`, chatBody({ messages }), bearer(key));
    expect(t.status).toBe(400);
    expect((await t.json()).error.param).toBe('messages[1].tool_calls[0].function.arguments');
    await stillHealthy();
  });
});

describe('counts and lengths', () => {
  it('answers 50000 stray fields on /v1/infer with a short message naming the first', async () => {
    const body: Record<string, unknown> = { specialist: 'chat', prompt: 'x' };
    for (let i = 0; i < 50_000; i++) body[`f${i}`] = 0;
    const res = await postJson(`${h.baseURL}/infer`, body, bearer(key));
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error.param).toBe('f0');
    expect(error.message).toContain("Unknown parameters: 'f0', 'f1', 'f2', 'f3', 'f4' and 49995 more.");
    expect(error.message.length).toBeLessThan(500);
  });

  it(`refuses more than ${MAX_MESSAGES} messages naming messages`, async () => {
    const messages = Array.from({ length: MAX_MESSAGES + 1 }, () => ({ role: 'user', content: 'x' }));
    const res = await postJson(`${h.baseURL}/chat/completions`, chatBody({ messages }), bearer(key));
    expect(res.status).toBe(400);
    const { error } = await res.json();
    expect(error.param).toBe('messages');
    expect(error.message).toContain(`at most ${MAX_MESSAGES} items`);
  });

  it(`refuses more than ${MAX_TOOLS} tools, and stop strings over ${MAX_STOP_CHARS} characters`, async () => {
    const tools = Array.from({ length: MAX_TOOLS + 1 }, (_, i) => ({ type: 'function', function: { name: `f${i}` } }));
    const t = await postJson(`${h.baseURL}/chat/completions`, chatBody({ tools }), bearer(key));
    expect(t.status).toBe(400);
    expect((await t.json()).error.param).toBe('tools');

    const s = await postJson(`${h.baseURL}/chat/completions`, chatBody({ stop: ['ok', 'x'.repeat(MAX_STOP_CHARS + 1)] }), bearer(key));
    expect(s.status).toBe(400);
    const { error } = await s.json();
    expect(error.param).toBe('stop[1]');
    expect(error.message).toContain(`at most ${MAX_STOP_CHARS} characters`);
  });
});
