/** The HTTP envelope: health, routing errors, bodies, CORS and request ids, in the provider's error shape. */
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, chatBody, postJson, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startServer({ maxBodyBytes: 64 * 1024 });
  key = h.key('solo');
});
afterAll(() => h.close());

const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

async function expectError(res: Response, status: number, type: string, code: string | null, param: string | null = null): Promise<string> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/json');
  const body = await res.json();
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toEqual({ message: expect.any(String), type, param, code });
  return body.error.message;
}

describe('GET /health', () => {
  it('is public and reports ok, the package version and uptime', async () => {
    const res = await fetch(`${h.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', version, uptime_seconds: 0 });
    h.clock.advance(61_500);
    expect((await (await fetch(`${h.url}/health`)).json()).uptime_seconds).toBe(61);
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
  });
});

describe('routing', () => {
  it('answers an unknown route with 404 in the error shape', async () => {
    const msg = await expectError(await fetch(`${h.url}/v1/completions`, { method: 'POST', headers: bearer(key) }), 404, 'invalid_request_error', 'unknown_url');
    expect(msg).toContain('POST /v1/completions');
    await expectError(await fetch(`${h.url}/`), 404, 'invalid_request_error', 'unknown_url');
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const res = await fetch(`${h.baseURL}/chat/completions`, { headers: bearer(key) });
    expect(res.headers.get('allow')).toBe('POST');
    await expectError(res, 405, 'invalid_request_error', 'method_not_allowed');
    const res2 = await fetch(`${h.baseURL}/models`, { method: 'DELETE' });
    expect(res2.headers.get('allow')).toBe('GET, HEAD');
    await expectError(res2, 405, 'invalid_request_error', 'method_not_allowed');
  });

  it('ignores the query string', async () => {
    expect((await fetch(`${h.baseURL}/models?limit=3`, { headers: bearer(key) })).status).toBe(200);
  });
});

describe('request bodies', () => {
  const url = () => `${h.baseURL}/chat/completions`;

  it('400s malformed JSON without echoing it', async () => {
    const res = await fetch(url(), { method: 'POST', headers: { ...bearer(key), 'content-type': 'application/json' }, body: '{"model": "svc-chat", "messages": [secret' });
    const msg = await expectError(res, 400, 'invalid_request_error', 'invalid_json');
    expect(msg).toContain('could not parse the JSON body');
    expect(msg).not.toContain('secret');
    expect(h.logs.join('\n')).not.toContain('secret');
  });

  it('400s an empty body and a body that is not an object', async () => {
    await expectError(await fetch(url(), { method: 'POST', headers: { ...bearer(key), 'content-type': 'application/json' } }), 400, 'invalid_request_error', 'invalid_json');
    await expectError(await postJson(url(), [chatBody()], bearer(key)), 400, 'invalid_request_error', 'invalid_json');
  });

  it('400s a wrong or missing content type, as the provider does', async () => {
    const body = JSON.stringify(chatBody());
    const msg = await expectError(await fetch(url(), { method: 'POST', headers: { ...bearer(key), 'content-type': 'text/plain' }, body }), 400, 'invalid_request_error', 'unsupported_content_type');
    expect(msg).toContain("got 'text/plain'");
    await expectError(await fetch(url(), { method: 'POST', headers: { ...bearer(key), 'content-type': 'application/x-www-form-urlencoded' }, body: 'model=svc-chat' }), 400, 'invalid_request_error', 'unsupported_content_type');
    const res = await fetch(url(), { method: 'POST', headers: { ...bearer(key), 'content-type': 'application/json; charset=utf-8' }, body: JSON.stringify(chatBody({ max_tokens: 99999 })) });
    await expectError(res, 400, 'invalid_request_error', null, 'max_tokens');
  });

  it('413s a body over the limit, declared or streamed, and the server keeps serving', async () => {
    const big = JSON.stringify(chatBody({ messages: [{ role: 'user', content: 'x'.repeat(200 * 1024) }] }));
    await expectError(await postJson(url(), JSON.parse(big), bearer(key)), 413, 'invalid_request_error', 'request_too_large');
    // Chunked: no content-length, the limit trips while reading.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(url(), { method: 'POST', headers: { ...bearer(key), 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      for (let i = 0; i < 10; i++) req.write('x'.repeat(10 * 1024));
      req.end();
    });
    expect(status).toBe(413);
    expect((await fetch(`${h.url}/health`)).status).toBe(200);
  });

  it('gives validation errors the provider shape with the parameter named', async () => {
    const msg = await expectError(await postJson(url(), chatBody({ max_tokens: 5000 }), bearer(key)), 400, 'invalid_request_error', null, 'max_tokens');
    expect(msg).toBe("Invalid 'max_tokens': must be at most 4096, got 5000.");
    await expectError(await postJson(url(), chatBody({ messages: [] }), bearer(key)), 400, 'invalid_request_error', null, 'messages');
    await expectError(await postJson(url(), chatBody({ stream_options: { include_usage: true } }), bearer(key)), 400, 'invalid_request_error', null, 'stream_options');
    await expectError(await postJson(url(), chatBody({ n: 3 }), bearer(key)), 400, 'invalid_request_error', null, 'n');
    await expectError(await postJson(`${h.baseURL}/infer`, { specialist: 'chat' }, bearer(key)), 400, 'invalid_request_error', null, 'prompt');
  });

  it('404s an unknown model or specialist with model_not_found', async () => {
    const msg = await expectError(await postJson(url(), chatBody({ model: 'gpt-5' }), bearer(key)), 404, 'invalid_request_error', 'model_not_found', 'model');
    expect(msg).toBe('The model `gpt-5` does not exist or you do not have access to it.');
    await expectError(await postJson(`${h.baseURL}/infer`, { specialist: 'poetry', prompt: 'x' }, bearer(key)), 404, 'invalid_request_error', 'model_not_found', 'specialist');
    await expectError(await fetch(`${h.baseURL}/models/svc-poetry`, { headers: bearer(key) }), 404, 'invalid_request_error', 'model_not_found', 'model');
  });

  it('gates tools, functions and JSON formats by plan, before anything else about them', async () => {
    const k = h.key('solo');
    const starter = h.key('starter');
    const tools = [{ type: 'function', function: { name: 'f', parameters: {} } }];
    await expectError(await postJson(url(), chatBody({ tools }), bearer(k)), 403, 'permission_error', 'feature_not_in_plan', 'tools');
    await expectError(await postJson(url(), chatBody({ functions: [{ name: 'f' }] }), bearer(k)), 403, 'permission_error', 'feature_not_in_plan', 'functions');
    await expectError(await postJson(url(), chatBody({ response_format: { type: 'json_object' } }), bearer(k)), 403, 'permission_error', 'feature_not_in_plan', 'response_format');
    // Starter has JSON schema but not function calling; even a tool list that is wrong otherwise hears the plan first.
    await expectError(await postJson(url(), chatBody({ tools, response_format: { type: 'json_object' } }), bearer(starter)), 403, 'permission_error', 'feature_not_in_plan', 'tools');
    // extract's own JSON is the specialist itself; a caller's schema is the jsonSchema feature.
    await expectError(await postJson(`${h.baseURL}/infer`, { specialist: 'classify', prompt: 'x', schema: { type: 'object' } }, bearer(k)), 400, 'invalid_request_error', null, 'schema');
  });

  it('names extension fields that do not apply, and unknown fields on /v1/infer', async () => {
    const k = h.key('solo');
    let msg = await expectError(await postJson(url(), chatBody({ labels: ['a', 'b'] }), bearer(k)), 400, 'invalid_request_error', null, 'labels');
    expect(msg).toContain("'labels' does not apply to the 'chat' specialist");
    msg = await expectError(await postJson(`${h.baseURL}/infer`, { specialist: 'summarise', prompt: 'x', max_bullets: 2, format: 'prose' }, bearer(k)), 400, 'invalid_request_error', null, 'max_bullets');
    expect(msg).toContain("only to format 'bullets'");
    msg = await expectError(await postJson(`${h.baseURL}/infer`, { specialist: 'classify', prompt: 'x', lables: ['a', 'b'] }, bearer(k)), 400, 'invalid_request_error', null, 'lables');
    expect(msg).toContain("Unknown parameter: 'lables'");
    msg = await expectError(await postJson(`${h.baseURL}/infer`, { specialist: 'classify', prompt: 'x', conversation_id: 'c1' }, bearer(k)), 400, 'invalid_request_error', null, 'conversation_id');
    expect(msg).toContain('only to specialists with memory');
    // Unknown fields on chat completions are ignored, as the provider does.
    expect((await postJson(url(), chatBody({ conversation_id: 'c1', max_tokens: 1 }), bearer(k))).status).toBe(200);
  });
});

describe('CORS and request ids', () => {
  it('answers a preflight without a key, allowing Authorization and the SDK headers', async () => {
    const res = await fetch(`${h.baseURL}/chat/completions`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-stainless-os' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type, x-stainless-os');
    expect(res.headers.get('access-control-max-age')).toBe('86400');
  });

  it('exposes the rate-limit headers and the request id to browsers on every response', async () => {
    for (const res of [await fetch(`${h.baseURL}/models`, { headers: bearer(key) }), await fetch(`${h.baseURL}/models`), await fetch(`${h.url}/nope`)]) {
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      const exposed = res.headers.get('access-control-expose-headers')!;
      for (const name of ['x-request-id', 'x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests', 'retry-after']) expect(exposed).toContain(name);
      expect(res.headers.get('x-request-id')).toMatch(/^req_[A-Za-z0-9]{24}$/);
    }
  });

  it('keeps a sane client request id, replaces an odd one, and logs it', async () => {
    const mine = await fetch(`${h.url}/health`, { headers: { 'x-request-id': 'trace-abc.123:4' } });
    expect(mine.headers.get('x-request-id')).toBe('trace-abc.123:4');
    expect(h.logs.some((l) => JSON.parse(l).reqId === 'trace-abc.123:4')).toBe(true);
    const odd = await fetch(`${h.url}/health`, { headers: { 'x-request-id': 'a b<script>' } });
    expect(odd.headers.get('x-request-id')).toMatch(/^req_/);
    const long = await fetch(`${h.url}/health`, { headers: { 'x-request-id': 'a'.repeat(200) } });
    expect(long.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('answers malformed HTTP with a JSON 400', async () => {
    const { connect } = await import('node:net');
    const u = new URL(h.url);
    const reply = await new Promise<string>((resolve) => {
      const s = connect(Number(u.port), u.hostname, () => s.write('GARBAGE / HTTP/1.1\r\n\r\n'));
      let data = '';
      s.on('data', (d) => (data += d));
      s.on('close', () => resolve(data));
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect(reply).toContain('"type":"invalid_request_error"');
  });
});

describe('models', () => {
  it('lists the plan’s specialists as svc-<name> models', async () => {
    const res = await fetch(`${h.baseURL}/models`, { headers: bearer(key) });
    const body = await res.json();
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(['svc-classify', 'svc-summarise', 'svc-chat']);
    for (const m of body.data) expect(m).toEqual({ id: m.id, object: 'model', created: expect.any(Number), owned_by: 'svc' });
    const pro = await (await fetch(`${h.baseURL}/models`, { headers: bearer(h.key('professional')) })).json();
    expect(pro.data).toHaveLength(6);
  });

  it('retrieves a model by any accepted name, echoing it; 403 outside the plan', async () => {
    for (const id of ['svc-chat', 'chat', 'gpt-4o-2024-08-06']) {
      const res = await fetch(`${h.baseURL}/models/${id}`, { headers: bearer(key) });
      expect(await res.json()).toEqual({ id, object: 'model', created: expect.any(Number), owned_by: 'svc' });
    }
    await expectError(await fetch(`${h.baseURL}/models/svc-code`, { headers: bearer(key) }), 403, 'permission_error', 'specialist_not_in_plan', 'model');
  });
});
