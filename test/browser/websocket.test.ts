/**
 * A real browser's WebSocket against the server: Chromium cannot set an Authorization header on a
 * WebSocket, so the key travels as the `svc-api-key.<key>` subprotocol beside `svc-v1`, and the server
 * must answer with `svc-v1` or the browser drops the connection. A request and a stream run over it.
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { startServer, type Harness } from '../http/helpers/harness.ts';

const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
let h: Harness;
let browser: Browser;

beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--disable-gpu'] });
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

describe('WebSocket from headless Chromium', () => {
  it('authenticates with the subprotocol, gets svc-v1 back, and runs a request and a stream', async () => {
    const key = h.key('professional', { paid: true });
    const page = await browser.newPage();
    await page.goto(`${h.url}/health`);
    const r = await page.evaluate(
      async ({ url, key }) => {
        const ws = new WebSocket(url, ['svc-v1', `svc-api-key.${key}`]);
        const frames: { id: string | null; type: string; body?: { data?: { id: string }[] }; data?: { choices: { delta: { content?: string } }[] } }[] = [];
        const ended = new Promise<void>((resolve) => {
          ws.onmessage = (e) => {
            const m = JSON.parse(e.data as string);
            frames.push(m);
            if (m.id === 's' && (m.type === 'done' || m.type === 'error')) resolve();
          };
        });
        await new Promise((resolve, reject) => {
          ws.onopen = resolve;
          ws.onerror = () => reject(new Error('the WebSocket did not open'));
        });
        ws.send(JSON.stringify({ id: 'm', type: 'request', method: 'GET', path: '/v1/models' }));
        ws.send(JSON.stringify({ id: 's', type: 'request', method: 'POST', path: '/v1/chat/completions', body: { model: 'svc-chat', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 8, temperature: 0, stream: true } }));
        await ended;
        const protocol = ws.protocol;
        ws.close();
        const models = frames.find((f) => f.id === 'm');
        return {
          protocol,
          modelIds: models?.body?.data?.map((d) => d.id) ?? [],
          chunks: frames.filter((f) => f.id === 's' && f.type === 'chunk').length,
          text: frames.filter((f) => f.id === 's' && f.type === 'chunk').map((f) => f.data?.choices[0]?.delta?.content ?? '').join(''),
          last: frames.filter((f) => f.id === 's').at(-1)?.type,
        };
      },
      { url: h.url.replace(/^http/, 'ws') + '/v1/ws', key },
    );
    expect(r.protocol).toBe('svc-v1');
    expect(r.modelIds).toContain('svc-chat');
    expect(r.chunks).toBeGreaterThan(2);
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.last).toBe('done');
    await page.close();
  });
});
