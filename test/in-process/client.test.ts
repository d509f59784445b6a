/**
 * The in-process client against the same service the HTTP server runs: the official openai client over
 * HTTP and createClient(service) give the same answers, chunks, errors and usage, with no HTTP between.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, ServiceError, type JsonObject, type SvcClient } from '../../adapters/in-process/client.ts';
import type { FinishedRequest } from '../../adapters/kit/observer.ts';
import { testEngine } from '../helpers/engine.ts';
import { startServer, type Harness } from '../http/helpers/harness.ts';

let h: Harness;
let key: string;
let http: OpenAI;
let local: SvcClient;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  key = h.key('professional', { paid: true });
  http = new OpenAI({ baseURL: h.baseURL, apiKey: key });
  local = createClient(h.app.service, { apiKey: key });
});
afterAll(() => h.close());

const request = { model: 'svc-chat', messages: [{ role: 'user' as const, content: 'Once upon a time' }], max_tokens: 10, temperature: 0 };

/** A chunk or completion without what differs per request: ids, times, and how much of the prompt the prefix cache held. */
function stable(o: JsonObject): JsonObject {
  const { id: _id, created: _created, system_fingerprint: _fp, ...rest } = o;
  if (rest.usage && typeof rest.usage === 'object') {
    const { prompt_tokens_details: _cached, ...usage } = rest.usage as JsonObject;
    rest.usage = usage;
  }
  return rest;
}

describe('createClient(service): the SDK shapes without HTTP', () => {
  it('a completion equals the one the openai client gets over HTTP', async () => {
    const viaHttp = await http.chat.completions.create(request);
    const inProcess = await local.chat.completions.create(request);
    expect(inProcess.object).toBe('chat.completion');
    expect(stable(inProcess)).toEqual(stable(viaHttp as unknown as JsonObject));
  });

  it('a stream yields the same chunk objects as the SSE data lines, usage last', async () => {
    const streamed = { ...request, stream: true as const, stream_options: { include_usage: true } };
    const viaHttp: JsonObject[] = [];
    for await (const c of await http.chat.completions.create(streamed)) viaHttp.push(c as unknown as JsonObject);
    const inProcess: JsonObject[] = [];
    for await (const c of await local.chat.completions.create(streamed)) inProcess.push(c);
    expect(inProcess.length).toBeGreaterThan(2);
    expect(inProcess.map(stable)).toEqual(viaHttp.map(stable));
    expect(inProcess.at(-1)!.usage).toMatchObject({ completion_tokens: expect.any(Number) });
  });

  it('infer, models and usage answer as over HTTP, and usage counts both transports', async () => {
    const before = (await local.usage()).requests_used as number;
    const r = await local.infer({ specialist: 'classify', prompt: 'I love this.', labels: ['positive', 'negative'] });
    expect(['positive', 'negative']).toContain(r.result);
    const models = await local.models.list();
    expect(models.data.map((m) => m.id)).toEqual((await http.models.list()).data.map((m) => m.id));
    expect((await local.models.retrieve('svc-chat')).id).toBe('svc-chat');
    await http.chat.completions.create(request);
    expect((await local.usage()).requests_used).toBe(before + 2);
    expect((await local.health()).status).toBeDefined();
    const resp = await local.responses.create({ model: 'svc-chat', input: 'Once upon a time', max_output_tokens: 6, temperature: 0 });
    expect(resp.object).toBe('response');
    const events: string[] = [];
    for await (const e of await local.responses.create({ model: 'svc-chat', input: 'Once upon a time', max_output_tokens: 6, stream: true })) events.push(e.type as string);
    expect(events[0]).toBe('response.created');
  });

  it('refusals throw ServiceError with the status, the error object and the headers HTTP sends', async () => {
    const bad = createClient(h.app.service, { apiKey: 'svc_live_' + 'x'.repeat(32) });
    const e = await bad.models.list().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ServiceError);
    expect((e as ServiceError).status).toBe(401);
    expect((e as ServiceError).type).toBe('authentication_error');

    const missing = await local.models.retrieve('no-such-model').catch((x: unknown) => x as ServiceError);
    expect(missing.status).toBe(404);
    expect(missing.param).toBe('model');

    const invalid = await local.chat.completions.create({ model: 'svc-chat', messages: [] }).catch((x: unknown) => x as ServiceError);
    expect(invalid.status).toBe(400);
    expect(invalid.param).toBe('messages');

    // Over the plan's per-minute limit: 429 with retry-after, as over HTTP.
    const tight = h.key('enterprise', { paid: true, rpm: 1, monthly: 1000 });
    const limited = createClient(h.app.service, { apiKey: tight });
    await limited.chat.completions.create(request);
    const refused = (await limited.chat.completions.create(request).catch((x: unknown) => x)) as ServiceError;
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['x-ratelimit-remaining-requests']).toBe('0');
  });

  it('request bodies are bounded as over HTTP: size and nesting depth', async () => {
    const small = createClient(h.app.service, { apiKey: key, maxBodyBytes: 200 });
    const big = await small.chat.completions.create({ ...request, messages: [{ role: 'user', content: 'x'.repeat(500) }] }).catch((x: unknown) => x as ServiceError);
    expect(big.status).toBe(413);
    let deep: unknown = 'x';
    for (let i = 0; i < 200; i++) deep = [deep];
    const nested = await local.chat.completions.create({ ...request, metadata: deep }).catch((x: unknown) => x as ServiceError);
    expect(nested.status).toBe(400);
    expect(nested.code).toBe('json_too_deep');
  });

  it('aborting the signal stops a stream, and leaving the loop early stops the generation too', async () => {
    const controller = new AbortController();
    const long = { ...request, max_tokens: 200, stream: true as const };
    const chunks: JsonObject[] = [];
    const consumed = (async () => {
      for await (const c of await local.chat.completions.create(long, { signal: controller.signal })) {
        chunks.push(c);
        if (chunks.length === 3) controller.abort();
      }
    })();
    await expect(consumed).rejects.toBeInstanceOf(ServiceError);
    expect(chunks.length).toBeLessThan(20);

    let seen = 0;
    for await (const _ of await local.chat.completions.create(long)) if (++seen === 2) break;
    // Nothing is left running for this key once the loop is left.
    await new Promise((r) => setTimeout(r, 50));
    expect(h.app.service.admission.runningCount).toBe(0);
  });

  it('tells an observer of every finished request, as the other transports tell the metrics', async () => {
    const seen: FinishedRequest[] = [];
    const watched = createClient(h.app.service, { apiKey: key, observe: (f) => seen.push(f) });
    await watched.chat.completions.create(request);
    for await (const _ of await watched.chat.completions.create({ ...request, stream: true })) void _;
    await expect(watched.chat.completions.create({ ...request, model: 'svc-nope' })).rejects.toThrow(ServiceError);
    await watched.models.list();
    expect(seen.map((f) => [f.transport, f.endpoint, f.status, f.record.specialist ?? null])).toEqual([
      ['in-process', 'chat.completions', 200, 'chat'],
      ['in-process', 'chat.completions', 200, 'chat'],
      ['in-process', 'chat.completions', 404, null],
      ['in-process', 'models.list', 200, null],
    ]);
    // The generations carry their token times, for the time-to-first-token and tokens/s histograms.
    expect(seen[1].record.firstTokenAt).toBeGreaterThanOrEqual(seen[1].startedAt);
    expect(seen[1].record.completionTokens).toBe(10);
  });
});
