/**
 * The operators' port of a real `svc serve` process: /metrics parses with a Prometheus text parser and
 * counts what happened (requests by endpoint, specialist, status and transport, latency and token
 * histograms, refusals, KV pages, the adapter), and /ready is false while the replica drains; on the
 * API port, /ready is false until the model has loaded.
 */
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheus, { type PromFamily } from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { connectWs } from '../../adapters/ws/client.ts';
import { createKey, startServe, type Served } from '../cli/helpers/cli.ts';
import { startServer } from '../http/helpers/harness.ts';

const started: Served[] = [];
afterEach(() => {
  for (const s of started.splice(0)) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
});

const chat = (s: Served, key: string, extra: Record<string, unknown> = {}) =>
  fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'svc-chat', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 3, temperature: 0, ...extra }),
  });

/** The families (the parser throws on any line that is not valid exposition format) and the raw text. */
async function scrape(url: string): Promise<{ families: PromFamily[]; text: string }> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const text = await res.text();
  return { families: parsePrometheus(text), text };
}

/**
 * A labelled histogram's count. The parser folds labelled histograms into one sample, so the count is
 * read from its `_count` line (the family itself is checked to be a histogram).
 */
function histogramCount(m: { families: PromFamily[]; text: string }, name: string, labels: string): number {
  expect(m.families.find((f) => f.name === name)?.type).toBe('HISTOGRAM');
  const line = m.text.split('\n').find((l) => l.startsWith(`${name}_count{${labels}}`));
  expect(line, `${name}_count{${labels}}`).toBeDefined();
  return Number(line!.split(' ').pop());
}

function sample(families: PromFamily[], name: string, labels: Record<string, string>) {
  const f = families.find((x) => x.name === name);
  expect(f, name).toBeDefined();
  return f!.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

describe('metrics and readiness', () => {
  it('counts requests, latencies, tokens, refusals and engine state, parsed as Prometheus text', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-metrics-'));
    const key = await createKey(dir, '--plan', 'solo');
    const other = await createKey(dir, '--plan', 'solo');
    const s = await startServe(dir, ['--metrics-port', '0']);
    started.push(s);
    const metricsUrl = s.logs.find((l) => l.msg === 'metrics listening')!.url as string;
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(metricsUrl).not.toBe(s.url);
    // Not on the public port.
    expect((await fetch(`${s.url}/metrics`)).status).toBe(404);
    expect(await (await fetch(`${metricsUrl}/ready`)).json()).toEqual({ ready: true, reason: null });
    expect((await fetch(`${s.url}/ready`)).status).toBe(200);

    expect((await chat(s, key)).status).toBe(200);
    const streamed = await chat(s, key, { stream: true, max_tokens: 6 });
    expect(streamed.status).toBe(200);
    await streamed.text();
    expect((await chat(s, 'svc_live_notAKeyAtAllxxxxxxxxxxxxxxxxxx')).status).toBe(401);
    const ws = await connectWs(s.url.replace(/^http/, 'ws') + '/v1/ws', key, WebSocket as never);
    await ws.request('POST', '/v1/chat/completions', { model: 'svc-chat', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
    ws.close();
    // The Solo plan's 20 per minute: 3 used above, so the 21st request is refused.
    const statuses: number[] = [];
    for (let i = 0; i < 18; i++) statuses.push((await chat(s, key, { max_tokens: 1 })).status);
    expect(statuses.slice(0, 17).every((x) => x === 200)).toBe(true);
    expect(statuses[17]).toBe(429);

    const scraped = await scrape(metricsUrl);
    const m = scraped.families;
    expect(Number(sample(m, 'svc_requests_total', { endpoint: 'chat.completions', specialist: 'chat', status: '200', transport: 'http' })!.value)).toBe(19);
    expect(Number(sample(m, 'svc_requests_total', { endpoint: 'chat.completions', status: '401', transport: 'http' })!.value)).toBe(1);
    expect(Number(sample(m, 'svc_requests_total', { endpoint: 'chat.completions', status: '200', transport: 'ws' })!.value)).toBe(1);
    expect(Number(sample(m, 'svc_requests_total', { endpoint: 'chat.completions', status: '429', transport: 'http' })!.value)).toBe(1);
    expect(Number(sample(m, 'svc_refusals_total', { code: 'rate_limit_exceeded' })!.value)).toBe(1);
    expect(histogramCount(scraped, 'svc_request_duration_seconds', 'endpoint="chat.completions",transport="http"')).toBe(21);
    expect(histogramCount(scraped, 'svc_time_to_first_token_seconds', 'specialist="chat"')).toBe(20);
    expect(histogramCount(scraped, 'svc_tokens_per_second', 'specialist="chat"')).toBeGreaterThanOrEqual(2);
    const free = Number(sample(m, 'svc_kv_pages', { state: 'free' })!.value);
    const used = Number(sample(m, 'svc_kv_pages', { state: 'used' })!.value);
    expect(free + used).toBeGreaterThan(0);
    expect(Number(sample(m, 'svc_queue_depth', {})!.value)).toBe(0);
    expect(Number(sample(m, 'svc_running_generations', {})!.value)).toBe(0);
    expect(Number(sample(m, 'svc_prefix_cache', { counter: 'lookups' })!.value)).toBeGreaterThan(0);
    const info = sample(m, 'svc_info', {})!;
    expect(info.labels!.adapter).toMatch(/llvmpipe|swiftshader|gpu|vulkan|opengl/i);
    expect(info.labels!.version).toMatch(/^\d+\.\d+\.\d+/);

    // Draining: a request is still arriving when SIGTERM comes; meanwhile the replica is not ready.
    const slow = request(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json' } });
    slow.on('error', () => {});
    slow.write('{"model":');
    await new Promise((r) => setTimeout(r, 200));
    s.proc.kill('SIGTERM');
    await expect.poll(async () => (await fetch(`${metricsUrl}/ready`).catch(() => null))?.status, { timeout: 5000 }).toBe(503);
    expect(await (await fetch(`${metricsUrl}/ready`)).json()).toEqual({ ready: false, reason: 'draining' });
    slow.end('"svc-chat","messages":[{"role":"user","content":"x"}],"max_tokens":1}');
    expect((await s.exited).code).toBe(0);
  }, 240_000);

  it('/ready on the API port is 503 until the model has loaded, then 200', async () => {
    const h = await startServer({});
    try {
      const before = await fetch(`${h.url}/ready`);
      expect(before.status).toBe(503);
      expect(await before.json()).toEqual({ ready: false, reason: 'loading the model' });
      expect((await fetch(`${h.url}/health`)).status).toBe(200);
      h.app.readiness.modelLoaded();
      expect((await fetch(`${h.url}/ready`)).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});
