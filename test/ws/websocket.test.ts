/**
 * The WebSocket transport against a real server on the tiny model, with the `ws` package as the client:
 * authentication at the upgrade (header or subprotocol, 401 with the JSON body otherwise), the message
 * protocol, streams equal to SSE, cancel, limits counted across transports, many streams at once.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { connectWs, WsRequestError, type WsConnection } from '../../adapters/ws/client.ts';
import type { ServerMessage } from '../../adapters/ws/messages.ts';
import { testEngine } from '../helpers/engine.ts';
import { startServer, type Harness } from '../http/helpers/harness.ts';

let h: Harness;
let key: string;
let wsUrl: string;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  key = h.key('professional', { paid: true });
  wsUrl = h.url.replace(/^http/, 'ws') + '/v1/ws';
});
afterAll(() => h.close());

const chat = { model: 'svc-chat', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12, temperature: 0 };

/** Opens a raw socket and collects every frame. */
async function rawSocket(opts: { headers?: Record<string, string>; protocols?: string[] } = {}): Promise<{ ws: WebSocket; frames: ServerMessage[]; next(pred: (m: ServerMessage) => boolean): Promise<ServerMessage> }> {
  const ws = new WebSocket(wsUrl, opts.protocols ?? [], { headers: opts.headers });
  const frames: ServerMessage[] = [];
  const waiters: { pred: (m: ServerMessage) => boolean; resolve: (m: ServerMessage) => void }[] = [];
  ws.on('message', (d) => {
    const m = JSON.parse(String(d)) as ServerMessage;
    frames.push(m);
    for (const w of [...waiters]) if (w.pred(m)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    frames,
    next: (pred) => {
      const seen = frames.find(pred);
      return seen ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ pred, resolve }));
    },
  };
}

function upgradeRefusal(headers: Record<string, string>, protocols: string[] = []): Promise<{ status: number; body: { error: { type: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, protocols, { headers });
    ws.on('open', () => reject(new Error('the upgrade was accepted')));
    ws.on('error', () => {});
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
  });
}

describe('WebSocket /v1/ws', () => {
  it('authenticates at the upgrade: Authorization header, or the svc-api-key subprotocol answered with svc-v1', async () => {
    const byHeader = await rawSocket({ headers: { authorization: `Bearer ${key}` } });
    expect(byHeader.ws.protocol).toBe('');
    byHeader.ws.close();
    const byProtocol = await rawSocket({ protocols: ['svc-v1', `svc-api-key.${key}`] });
    expect(byProtocol.ws.protocol).toBe('svc-v1');
    byProtocol.ws.close();
  });

  it('a bad or missing key gets HTTP 401 at the upgrade with the JSON error body; keys in the URL are not read', async () => {
    const bad = await upgradeRefusal({ authorization: 'Bearer svc_live_' + 'x'.repeat(32) });
    expect(bad.status).toBe(401);
    expect(bad.body.error.type).toBe('authentication_error');
    const none = await upgradeRefusal({});
    expect(none.status).toBe(401);
    const inUrl = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${wsUrl}?api_key=${key}`);
      ws.on('error', () => {});
      ws.on('unexpected-response', (_q, res) => resolve(res.statusCode!));
    });
    expect(inUrl).toBe(401);
  });

  it('answers any endpoint with one response frame, and errors with error frames naming the request', async () => {
    const s = await rawSocket({ headers: { authorization: `Bearer ${key}` } });
    s.ws.send(JSON.stringify({ id: 'm', type: 'request', method: 'GET', path: '/v1/models' }));
    const models = (await s.next((m) => m.id === 'm')) as ServerMessage & { type: 'response' };
    expect(models.type).toBe('response');
    expect(models.status).toBe(200);
    const viaHttp = await (await fetch(`${h.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(models.body).toEqual(viaHttp);

    s.ws.send(JSON.stringify({ id: 'x', type: 'request', method: 'GET', path: '/v1/nothing' }));
    expect(await s.next((m) => m.id === 'x')).toMatchObject({ type: 'error', status: 404 });
    s.ws.send('not json');
    expect(await s.next((m) => m.id === null)).toMatchObject({ type: 'error', status: 400, body: { error: { code: 'invalid_json' } } });
    s.ws.send(JSON.stringify({ id: 'b', type: 'request', method: 'POST', path: '/v1/chat/completions', body: { model: 'svc-chat', messages: [] } }));
    expect(await s.next((m) => m.id === 'b')).toMatchObject({ type: 'error', status: 400, body: { error: { param: 'messages' } } });
    s.ws.close();
  });

  it('a stream carries exactly the chunks of the SSE stream for the same request, then done', async () => {
    const streamed = { ...chat, stream: true, stream_options: { include_usage: true } };
    const sse: unknown[] = [];
    for await (const c of await new OpenAI({ baseURL: h.baseURL, apiKey: key }).chat.completions.create(streamed as OpenAI.ChatCompletionCreateParamsStreaming)) sse.push(c);
    const conn = await connectWs(wsUrl, key, WebSocket as never);
    const frames: unknown[] = [];
    for await (const c of conn.stream('/v1/chat/completions', streamed)) frames.push(c);
    conn.close();
    const stable = (c: unknown) => {
      const { id: _i, created: _c, usage, ...rest } = c as Record<string, unknown>;
      const { prompt_tokens_details: _d, ...u } = (usage ?? {}) as Record<string, unknown>;
      return { ...rest, usage: usage === null ? null : u };
    };
    expect(frames.length).toBeGreaterThan(2);
    expect(frames.map(stable)).toEqual(sse.map(stable));
  });

  it('cancel stops the generation and ends the request with a cancelled error; the engine is idle after', async () => {
    const s = await rawSocket({ headers: { authorization: `Bearer ${key}` } });
    s.ws.send(JSON.stringify({ id: 'long', type: 'request', method: 'POST', path: '/v1/chat/completions', body: { ...chat, max_tokens: 300, stream: true } }));
    await s.next((m) => m.id === 'long' && m.type === 'chunk');
    s.ws.send(JSON.stringify({ id: 'long', type: 'cancel' }));
    const end = await s.next((m) => m.id === 'long' && (m.type === 'error' || m.type === 'done'));
    expect(end).toMatchObject({ type: 'error', status: 499, body: { error: { code: 'cancelled' } } });
    expect(s.frames.filter((m) => m.type === 'chunk').length).toBeLessThan(100);
    const engine = await testEngine();
    expect(engine.stats().activeSequences).toBe(0);
    // Every page is free again, or listed by the prefix cache (which may keep the prompt's full pages).
    const st = engine.stats();
    expect(st.kvPages.free + (st.prefixCache?.blocks ?? 0)).toBe(st.kvPages.total);
    expect(h.app.service.admission.runningCount).toBe(0);
    s.ws.close();
  });

  it('the per-minute limit counts both transports: a 429 error frame with retry-after, as HTTP sends', async () => {
    const tight = h.key('enterprise', { paid: true, rpm: 2, monthly: 1000 });
    const viaHttp = new OpenAI({ baseURL: h.baseURL, apiKey: tight, maxRetries: 0 });
    await viaHttp.chat.completions.create(chat as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const conn = await connectWs(wsUrl, tight, WebSocket as never);
    await conn.request('POST', '/v1/chat/completions', chat);
    const refused = (await conn.request('POST', '/v1/chat/completions', chat).catch((e: unknown) => e)) as WsRequestError;
    expect(refused).toBeInstanceOf(WsRequestError);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    conn.close();
  });

  it('100 streams at once over 10 connections all complete, each under its own id', async () => {
    // A server whose queue holds them all, and four keys whose plans allow 25 at once each.
    const big = await startServer({ engine: () => testEngine(), admission: { maxRunning: 8, maxQueued: 128 } });
    try {
      const keys = [0, 1, 2, 3].map(() => big.key('enterprise', { paid: true, rpm: 1000, monthly: 100000 }));
      const url = big.url.replace(/^http/, 'ws') + '/v1/ws';
      const conns: WsConnection[] = await Promise.all(Array.from({ length: 10 }, (_, i) => connectWs(url, keys[i % 4], WebSocket as never)));
      const runs = Array.from({ length: 100 }, async (_, i) => {
        const texts: string[] = [];
        for await (const c of conns[i % 10].stream('/v1/chat/completions', { ...chat, max_tokens: 4, temperature: 0.8, seed: i, stream: true })) {
          texts.push((c as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? '');
        }
        return texts.length;
      });
      const counts = await Promise.all(runs);
      expect(counts.every((n) => n >= 2)).toBe(true);
      for (const c of conns) c.close();
    } finally {
      await big.close();
    }
  });

  it('closes a connection that sends a frame over the size limit (1009), and refuses binary frames (1003)', async () => {
    const big = await rawSocket({ headers: { authorization: `Bearer ${key}` } });
    const bigClosed = new Promise<number>((r) => big.ws.on('close', (code) => r(code)));
    big.ws.send('x'.repeat(2 * 1024 * 1024));
    expect(await bigClosed).toBe(1009);
    const bin = await rawSocket({ headers: { authorization: `Bearer ${key}` } });
    const binClosed = new Promise<number>((r) => bin.ws.on('close', (code) => r(code)));
    bin.ws.send(Buffer.from([1, 2, 3]));
    expect(await binClosed).toBe(1003);
  });

  it('a client that floods requests and never reads is closed (4008) without holding up a well-behaved one', async () => {
    const small = await startServer({ engine: () => testEngine(), ws: { closeBufferedBytes: 256 * 1024, pauseBufferedBytes: 64 * 1024 } });
    try {
      const url = small.url.replace(/^http/, 'ws') + '/v1/ws';
      const k = small.key('professional', { paid: true });
      const flooder = new WebSocket(url, { headers: { authorization: `Bearer ${k}` } });
      await new Promise((r) => flooder.once('open', r));
      const flooderClosed = new Promise<number>((r) => flooder.on('close', (code) => r(code)));
      // Stop reading: answers pile up in the kernel's buffers, then in the server's.
      (flooder as unknown as { _socket: { pause(): void } })._socket.pause();
      const frame = JSON.stringify({ id: 'h', type: 'request', method: 'GET', path: '/health' });
      for (let i = 0; i < 60_000; i++) flooder.send(frame.replace('"h"', `"h${i}"`));
      const polite = await connectWs(url, k, WebSocket as never);
      const started = performance.now();
      const chunks: unknown[] = [];
      for await (const c of polite.stream('/v1/chat/completions', { ...chat, stream: true })) chunks.push(c);
      expect(chunks.length).toBeGreaterThan(2);
      expect(performance.now() - started).toBeLessThan(20_000);
      // The server closed the flooder: only the polite connection is left.
      for (let i = 0; i < 200 && small.app.ws.connectionCount > 1; i++) await new Promise((r) => setTimeout(r, 50));
      expect(small.app.ws.connectionCount).toBe(1);
      // Reading again, the flooder finds its close frame (or the cut connection, had the server given up on it).
      (flooder as unknown as { _socket: { resume(): void } })._socket.resume();
      expect([4008, 1006]).toContain(await flooderClosed);
      polite.close();
    } finally {
      await small.close();
    }
  });
});
