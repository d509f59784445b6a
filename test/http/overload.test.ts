/**
 * Overload: idle and slow connections cannot starve the server (a connection cap that refuses at once,
 * 408 for requests that never arrive), and inference waits in a bounded queue: 503 `overloaded` beyond
 * it, 429 when a key holds its plan's concurrency, a queued caller who leaves is out at once, and no
 * refused request is counted.
 */
import { mkdtempSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createKey, startServe, type Served } from '../cli/helpers/cli.ts';
import { sharedModel } from '../helpers/models.ts';
import { bearer, chatBody, startServer, type Harness } from './helpers/harness.ts';

interface RawSocket {
  socket: Socket;
  /** Everything the server sent. */
  data: string;
  openedAt: number;
  closedAt?: number;
}

/** `n` TCP connections that send `send` (nothing by default) and then stay silent; resolves once each is connected or closed. */
async function openSockets(url: string, n: number, send = ''): Promise<RawSocket[]> {
  const { hostname, port } = new URL(url);
  const out: RawSocket[] = [];
  // In batches, so the listen backlog is not what refuses them.
  for (let start = 0; start < n; start += 250) {
    const batch = Array.from({ length: Math.min(250, n - start) }, () => {
      const raw: RawSocket = { socket: connect(Number(port), hostname), data: '', openedAt: performance.now() };
      raw.socket.setEncoding('utf8');
      raw.socket.on('data', (d: string) => (raw.data += d));
      raw.socket.on('error', () => {});
      raw.socket.on('close', () => (raw.closedAt = performance.now()));
      out.push(raw);
      return new Promise<void>((resolve) => {
        raw.socket.once('connect', () => {
          if (send) raw.socket.write(send);
          resolve();
        });
        raw.socket.once('close', () => resolve());
      });
    });
    await Promise.all(batch);
  }
  return out;
}

async function until(cond: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const isOpen = (s: RawSocket) => s.closedAt === undefined;

function completion(url: string, key: string, body: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(key) },
    body: JSON.stringify(chatBody(body)),
    signal,
  });
}

const started: Served[] = [];
let harness: Harness | undefined;
afterEach(async () => {
  for (const s of started.splice(0)) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
  await harness?.close();
  harness = undefined;
});

describe('connections', () => {
  it('serves /health and a completion beside 2500 idle sockets, refuses connections over the cap at once, and closes silent ones with 408', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-overload-'));
    const key = await createKey(dir, '--plan', 'scale');
    const cap = 2600;
    const s = await startServe(dir, ['--model', sharedModel('stories260K.gguf'), '--max-connections', String(cap), '--headers-timeout', '20', '--request-timeout', '25']);
    started.push(s);

    const idle = await openSockets(s.url, 2500);
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
    expect((await health.json()).status).toBe('ok');
    const res = await completion(s.url, key, { max_tokens: 4, temperature: 0 });
    expect(res.status).toBe(200);
    expect((await res.json()).choices[0].message.role).toBe('assistant');
    expect(idle.filter(isOpen).length, 'idle sockets still open while those were answered').toBe(2500);

    // Requests that never finish arriving: headers cut off, and an authenticated body that stalls.
    const [partial] = await openSockets(s.url, 1, 'GET /health HTTP/1.1\r\nHost: x\r\n');
    const stalled = JSON.stringify(chatBody()).slice(0, 10);
    const [slowBody] = await openSockets(
      s.url,
      1,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n${stalled}`,
    );

    // Past the cap: the server closes new connections at once, without a byte, and keeps the others.
    const extra = await openSockets(s.url, 200);
    await new Promise((r) => setTimeout(r, 2000));
    const refused = extra.filter((x) => !isOpen(x));
    expect(refused.length, 'connections refused over the cap').toBeGreaterThanOrEqual(90);
    for (const x of refused) expect(x.data).toBe('');
    // Long before the 20 s header timeout, so these were refused, not timed out.
    expect(Math.max(...refused.map((x) => x.closedAt! - x.openedAt)), 'ms from connect to refusal').toBeLessThan(5000);
    expect(idle.filter(isOpen).length + extra.filter(isOpen).length).toBeLessThanOrEqual(cap);

    // Sockets that never sent a request are answered 408 and closed once the header timeout passes.
    const silent = [...idle, ...extra.filter(isOpen), partial];
    await until(() => silent.every((x) => !isOpen(x)), 'the header timeout to close the silent sockets');
    for (const x of silent) expect(x.data.startsWith('HTTP/1.1 408 Request Timeout\r\n')).toBe(true);
    const body = JSON.parse(partial.data.slice(partial.data.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ error: { message: expect.stringContaining('did not arrive in time'), type: 'invalid_request_error', param: null, code: 'request_timeout' } });
    // The stalled body is cut off by the request timeout.
    await until(() => !isOpen(slowBody), 'the request timeout to close the stalled body');
    expect(slowBody.data.startsWith('HTTP/1.1 408 Request Timeout\r\n')).toBe(true);

    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    s.proc.kill('SIGTERM');
    expect((await s.exited).code).toBe(0);
  }, 240_000);
});

describe('keep-alive', () => {
  it('closes a connection after its last allowed request and an idle kept-alive one after the keep-alive timeout', async () => {
    const h = (harness = await startServer({ connections: { maxRequestsPerSocket: 2, keepAliveTimeoutMs: 1000 } }));
    const get = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';
    const [s] = await openSockets(h.url, 1, get);
    await until(() => s.data.includes('"status":"ok"'), 'the first answer');
    expect(s.data).toMatch(/\r\nConnection: keep-alive\r\n/i);
    s.socket.write(get);
    await until(() => !isOpen(s), 'the connection to close after its second request');
    expect(s.data.split('HTTP/1.1 200 OK').length - 1).toBe(2);
    expect(s.data.slice(s.data.lastIndexOf('HTTP/1.1 200 OK'))).toMatch(/\r\nConnection: close\r\n/i);

    // One answered request, then silence: closed by the keep-alive timeout, long before the header timeout.
    const [idle] = await openSockets(h.url, 1, get);
    await until(() => !isOpen(idle), 'the idle kept-alive connection to close', 8000);
    expect(idle.data.split('HTTP/1.1').length - 1).toBe(1);
  });
});

describe('bounded queue', () => {
  it('queues up to its depth, then 503 overloaded; 429 over a key’s concurrency; a queued caller who leaves is out at once; refusals are not counted', async () => {
    // Four places in all, so one key may hold two of them (Solo's maxConcurrent is 2 as well).
    const h = (harness = await startServer({ admission: { maxRunning: 1, maxQueued: 3 } }));
    const admission = h.app.service.admission;
    const solo = h.key('solo', { paid: true });
    const scale = h.key('scale', { paid: true });
    const starter = h.key('starter', { paid: true });

    // A: a long stream holds the only running place.
    const aAbort = new AbortController();
    const a = await completion(h.url, solo, { max_tokens: 2000, temperature: 0, stream: true, messages: [{ role: 'user', content: 'Once upon a time' }] }, aAbort.signal);
    expect(a.status).toBe(200);
    const reader = a.body!.getReader();
    let seen = '';
    while (!/"content":"[^"]/.test(seen)) seen += new TextDecoder().decode((await reader.read()).value);
    expect(admission.runningCount).toBe(1);

    // B: the same key waits in the queue.
    const bAbort = new AbortController();
    const b = completion(h.url, solo, { max_tokens: 4 }, bAbort.signal).catch((e: unknown) => e);
    await until(() => admission.queuedCount === 1, 'B to queue');

    // C: the key already holds its two places (A running, B waiting).
    const c = await completion(h.url, solo);
    expect(c.status).toBe(429);
    expect(c.headers.get('retry-after')).toBe('1');
    expect(await c.json()).toEqual({ error: { message: expect.stringContaining('Solo plan'), type: 'rate_limit_error', param: null, code: 'concurrency_limit_exceeded' } });

    // D1, D2: another key fills the queue; E, from a third key, finds it full.
    const d1 = completion(h.url, scale, { max_tokens: 4 });
    await until(() => admission.queuedCount === 2, 'D1 to queue');
    const d2 = completion(h.url, scale, { max_tokens: 4 });
    await until(() => admission.queuedCount === 3, 'D2 to queue');
    const e = await completion(h.url, starter, { max_tokens: 4 });
    expect(e.status).toBe(503);
    expect(Number(e.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await e.json()).toEqual({ error: { message: expect.stringContaining('overloaded'), type: 'server_error', param: null, code: 'overloaded' } });

    // B's client goes away: its place is free at once, so F gets in line instead of a 503.
    bAbort.abort();
    expect(await b).toBeInstanceOf(Error);
    await until(() => admission.queuedCount === 2, 'B to leave the queue', 5000);
    const f = completion(h.url, starter, { max_tokens: 4 });
    await until(() => admission.queuedCount === 3, 'F to queue');

    // A's client goes away: the others run in turn.
    aAbort.abort();
    for (const r of [d1, d2, f]) expect((await r).status).toBe(200);
    expect(admission.runningCount).toBe(0);
    expect(admission.queuedCount).toBe(0);

    // A counts (it reached the model and its client left mid-answer); B, C and E never reached it.
    const used = async (key: string) => (await (await fetch(`${h.baseURL}/usage`, { headers: bearer(key) })).json()).requests_used;
    expect(await used(solo)).toBe(1);
    expect(await used(scale)).toBe(2);
    expect(await used(starter)).toBe(1);
  }, 180_000);
});
