/**
 * The service in a browser tab with no server-side inference: the static site `svc web build` writes,
 * served by a plain static file server, opened in headless Chromium (SwiftShader WebGPU). The service
 * worker takes control and answers the API with the same bodies, statuses, headers and SSE framing as
 * the Node server; a reload loads the model from Cache Storage with no download, usage survives in
 * IndexedDB, an aborted fetch stops the generation, and the dedicated-worker fallback answers the same.
 */
import { build } from 'esbuild';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebSite } from '../../build/web-site.ts';
import { ARTIFACTS, launchChromium, openPage } from '../helpers/browser.ts';
import { testEngine } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';
import { serveStatic, type StaticServer } from '../helpers/static-server.ts';
import { startServer, type Harness } from '../http/helpers/harness.ts';

const MODEL_PATH = '/models/stories260K.gguf';

let dir: string;
let site: StaticServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let node: Harness;
let nodeKey: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-site-'));
  await buildWebSite({ out: dir, model: sharedModel('stories260K.gguf'), page: false, minify: false, engine: { maxSequences: 4 } });
  const bundle = await build({ entryPoints: [new URL('./local-service-page.ts', import.meta.url).pathname], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'error' });
  writeFileSync(join(dir, 'test.js'), bundle.outputFiles[0].text);
  writeFileSync(join(dir, 'test.html'), '<!doctype html><title>svc local test</title><h1>svc local service test page</h1><script type="module" src="test.js"></script>');
  copyFileSync(sharedModel('stories260K.gguf'), join(dir, 'models', 'resume.gguf'));
  site = await serveStatic(dir);
  browser = await launchChromium();
  context = await browser.newContext();
  page = await openTestPage();
  node = await startServer({ engine: () => testEngine() });
  nodeKey = node.key('scale', { paid: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await node?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function openTestPage(): Promise<Page> {
  return openPage(context, `${site.url}/test.html`, pageErrors, 'svcStart');
}

/** The same request to the Node server, as raw text. */
async function nodeRaw(path: string, body?: unknown, key: string | null = nodeKey): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(node.url + path, {
    method: body ? 'POST' : 'GET',
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** SSE text → the data payloads, with ids and timestamps blanked (they differ between any two runs). */
function events(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((e) => {
      expect(e.startsWith('data: ')).toBe(true);
      const data = e.slice(6);
      return data === '[DONE]' ? data : blank(JSON.parse(data));
    });
}

function blank(v: Record<string, unknown>): Record<string, unknown> {
  return { ...v, id: 'x', created: 0, system_fingerprint: 'x' };
}

const chat = { model: 'svc-chat', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 16, temperature: 0 };

describe('the service in a service worker', () => {
  it('takes control of the page, loads the model with progress, and lists the specialists', async () => {
    const started = await page.evaluate(() => window.svcStart());
    expect(started.mode).toBe('service-worker');
    expect(started.baseURL).toBe(`${site.url}/v1`);
    const phases = started.progress.map((p) => p.phase);
    expect(phases.at(-1)).toBe('ready');
    expect(await page.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${site.url}/sw.js`);
    const models = await page.evaluate(() => window.svcModels());
    const nodeModels = (JSON.parse((await nodeRaw('/v1/models')).text) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(models).toEqual(nodeModels);
    expect(models).toContain('svc-chat');
    expect(site.hits.get(MODEL_PATH) ?? 0).toBeGreaterThan(0);
  }, 120_000);

  it('streams a chat completion token by token, ending with [DONE], byte for byte as the Node server frames it', async () => {
    const body = { ...chat, stream: true, stream_options: { include_usage: true } };
    const inBrowser = await page.evaluate((b) => window.svcRaw('/v1/chat/completions', { body: b }), body);
    const onNode = await nodeRaw('/v1/chat/completions', body);
    expect(inBrowser.status).toBe(200);
    expect(inBrowser.headers['content-type']).toBe('text/event-stream');
    expect(inBrowser.headers['x-ratelimit-limit-requests']).toBe(onNode.headers.get('x-ratelimit-limit-requests'));
    expect(inBrowser.headers['x-request-id']).toMatch(/^req_/);
    expect(inBrowser.text.endsWith('data: [DONE]\n\n')).toBe(true);
    // Token by token: the page read the body in several pieces, one event each.
    expect(inBrowser.chunks).toBeGreaterThan(4);
    expect(events(inBrowser.text)).toEqual(events(onNode.text));
  }, 60_000);

  it('answers a completion, JSON mode, and errors with the same bodies and statuses as the Node server', async () => {
    const plain = (await page.evaluate((b) => window.svcChat(b), chat)) as { choices: { message: { content: string } }[]; usage: unknown };
    const onNode = JSON.parse((await nodeRaw('/v1/chat/completions', chat)).text) as typeof plain;
    expect(plain.choices).toEqual(onNode.choices);
    expect(plain.usage).toEqual(onNode.usage);

    const jsonMode = { ...chat, max_tokens: 40, response_format: { type: 'json_object' } };
    const json = (await page.evaluate((b) => window.svcChat(b), jsonMode)) as typeof plain;
    expect(() => JSON.parse(json.choices[0].message.content)).not.toThrow();

    for (const [path, body, key] of [
      ['/v1/chat/completions', chat, null],
      ['/v1/chat/completions', { ...chat, model: 'svc-nope' }, undefined],
      ['/v1/chat/completions', { ...chat, max_tokens: -1 }, undefined],
      ['/v1/nowhere', undefined, undefined],
    ] as const) {
      const b = await page.evaluate(([p, bd, k]) => window.svcRaw(p, { body: bd, key: k }), [path, body, key] as const);
      const n = await nodeRaw(path, body, key === null ? null : nodeKey);
      expect({ path, status: b.status }).toEqual({ path, status: n.status });
      expect(JSON.parse(b.text)).toEqual(JSON.parse(n.text));
    }
    const bad = await page.evaluate(() => window.svcRaw('/v1/chat/completions', { body: '{"model": "svc-chat", "messages": [' }));
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.code).toBe('invalid_json');
  }, 60_000);

  it('stops the generation when the page aborts its fetch', async () => {
    type Usage = { requests_used: number; tokens_used: number };
    const usage = async () => JSON.parse((await page.evaluate(() => window.svcRaw('/v1/usage'))).text) as Usage;
    const long = { ...chat, max_tokens: 400 };
    const promptTokens = ((await page.evaluate((b) => window.svcChat(b), { ...long, max_tokens: 1 })) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    const before = await usage();
    const first = await page.evaluate((b) => window.svcAbortAfterFirstChunk(b), long);
    expect(first.text.startsWith('data: ')).toBe(true);
    const status = async () => ((await page.evaluate(() => window.svcStatus())) as { engine: { activeSequences: number } }).engine.activeSequences;
    await expect.poll(status, { timeout: 10_000 }).toBe(0);
    // The request counts (its client went away mid-generation), with far fewer tokens than the 400 asked for.
    await expect.poll(async () => (await usage()).requests_used).toBe(before.requests_used + 1);
    const generated = (await usage()).tokens_used - before.tokens_used - promptTokens;
    expect(generated).toBeGreaterThanOrEqual(1);
    expect(generated).toBeLessThan(100);
  }, 60_000);

  it('after a reload with a fresh service worker, loads the model from Cache Storage with no download, and usage and chat memory survive', async () => {
    const remember = { specialist: 'chat', prompt: 'Tell me about the cat.', conversation_id: 'reload-1', max_tokens: 4, temperature: 0 };
    const infer = async (p: Page) => JSON.parse((await p.evaluate((b) => window.svcRaw('/v1/infer', { body: b }), remember)).text) as { history_turns: number };
    expect((await infer(page)).history_turns).toBe(0);
    expect((await infer(page)).history_turns).toBe(2);
    const usageBefore = JSON.parse((await page.evaluate(() => window.svcRaw('/v1/usage'))).text) as { requests_used: number };
    expect(usageBefore.requests_used).toBeGreaterThan(3);
    const downloads = site.hits.get(MODEL_PATH);
    await page.evaluate(() => window.svcUnregister());
    await page.reload();
    await page.waitForFunction(() => typeof window.svcStart === 'function');
    const started = await page.evaluate(() => window.svcStart());
    expect(started.mode).toBe('service-worker');
    const download = started.progress.filter((p) => p.phase === 'download' && p.total > 0).at(-1)!;
    expect(download.fromCache).toBe(download.total);
    expect(site.hits.get(MODEL_PATH)).toBe(downloads);
    const usageAfter = JSON.parse((await page.evaluate(() => window.svcRaw('/v1/usage'))).text) as { requests_used: number };
    expect(usageAfter.requests_used).toBe(usageBefore.requests_used);
    // Chat memory came back from IndexedDB too.
    expect((await infer(page)).history_turns).toBe(4);
    await page.screenshot({ path: join(ARTIFACTS, 'service-worker-page.png') });
  }, 120_000);

  it('runs the same service in a dedicated worker where a service worker cannot (forced fallback)', async () => {
    const p = await openTestPage();
    const started = await p.evaluate(() => window.svcStart('dedicated-worker'));
    expect(started.mode).toBe('dedicated-worker');
    const done = (await p.evaluate((b) => window.svcChat(b), chat)) as { choices: { message: { content: string } }[] };
    const onNode = JSON.parse((await nodeRaw('/v1/chat/completions', chat)).text) as typeof done;
    expect(done.choices).toEqual(onNode.choices);
    const streamed = await p.evaluate((b) => window.svcRaw('/v1/chat/completions', { body: b }), { ...chat, stream: true });
    expect(streamed.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(streamed.chunks).toBeGreaterThan(4);
    await p.close();
    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('downloads a model in ranges, resumes an interrupted download where it stopped, and reads back every byte', async () => {
    const url = `${site.url}/models/resume.gguf`;
    const chunk = 128 * 1024;
    const file = readFileSync(sharedModel('stories260K.gguf'));
    const chunks = Math.ceil(file.byteLength / chunk);
    const stopped = await page.evaluate(([u, c]) => window.svcDownload(u, c, 3), [url, chunk] as const);
    expect(stopped).toMatchObject({ completed: false, loaded: 3 * chunk, fromCache: 0 });
    const asked = site.hits.get('/models/resume.gguf')!;
    const resumed = await page.evaluate(([u, c]) => window.svcDownload(u, c), [url, chunk] as const);
    expect(resumed).toMatchObject({ completed: true, loaded: file.byteLength, total: file.byteLength, fromCache: 3 * chunk });
    // Only the missing chunks were fetched (plus one size probe).
    expect(site.hits.get('/models/resume.gguf')! - asked).toBe(chunks - 3 + 1);
    let checksum = 0;
    for (const b of file) checksum = (checksum * 31 + b) >>> 0;
    expect(resumed.checksum).toBe(checksum);
    const again = await page.evaluate(([u, c]) => window.svcDownload(u, c), [url, chunk] as const);
    expect(again.fromCache).toBe(file.byteLength);
    expect(site.hits.get('/models/resume.gguf')! - asked).toBe(chunks - 3 + 1);
  }, 60_000);
});
