/**
 * WebLLM compatibility in headless Chromium (SwiftShader WebGPU): a page written only against WebLLM's
 * client API (webllm-page.ts) drives WebLLM's own WebWorkerMLCEngineHandler and
 * ServiceWorkerMLCEngineHandler, hosting our engine (adapters/webllm). Init progress, completions whole
 * and streamed (greedy text equal to what the in-process client gets from the Node engine),
 * interruptGenerate, runtimeStatsText, reload to another model, raw text completions, unload, and the
 * features refused by name.
 */
import { build } from 'esbuild';
import { statSync } from 'node:fs';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { AppConfig, Completion } from '@mlc-ai/web-llm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type JsonObject, type SvcClient } from '../../adapters/in-process/client.ts';
import { buildWebSite } from '../../build/web-site.ts';
import { ARTIFACTS, launchChromium, openPage } from '../helpers/browser.ts';
import { testEngine } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';
import { serveStatic, type StaticServer } from '../helpers/static-server.ts';
import { startServer, type Harness } from '../http/helpers/harness.ts';

const OTHER = 'TinyStories-656K-Q8_0.gguf';

let dir: string;
let site: StaticServer;
let browser: Browser;
let context: BrowserContext;
let node: Harness;
let nodeClient: SvcClient;
const pageErrors: string[] = [];

/** The app config a WebLLM page passes: records whose `model` is a GGUF URL (absolute, or relative as WebLLM resolves it). */
let appConfig: AppConfig;

const messages = [{ role: 'user' as const, content: 'Once upon a time' }];
const greedy = { messages, max_tokens: 16, temperature: 0 };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-webllm-'));
  // svc-web.json (plans, specialists, version, the site's model) and models/stories260K.gguf.
  // The site as `svc web build --webllm` writes it: svc-web.json, models/, and the WebLLM hosts.
  await buildWebSite({ out: dir, model: sharedModel('stories260K.gguf'), page: false, minify: false, webllm: true, engine: { maxSequences: 4 } });
  copyFileSync(sharedModel(OTHER), join(dir, 'models', OTHER));
  const pageBundle = await build({ entryPoints: [new URL('./webllm-page.ts', import.meta.url).pathname], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, minify: true, logLevel: 'error' });
  const page = pageBundle.outputFiles[0].text;
  writeFileSync(join(dir, 'webllm-page.js'), page);
  writeFileSync(join(dir, 'webllm.html'), '<!doctype html><title>WebLLM on svc</title><style>pre{white-space:pre-wrap;font-size:13px}</style><h1>A WebLLM page, running on svc\'s engine</h1><script type="module" src="webllm-page.js"></script>');
  site = await serveStatic(dir);
  appConfig = {
    model_list: [
      { model_id: 'stories260K', model: `${site.url}/models/stories260K.gguf`, model_lib: '' },
      { model_id: 'tinystories-656k', model: `/models/${OTHER}`, model_lib: '', overrides: { context_window_size: 256, temperature: 0 } },
      { model_id: 'Llama-3.2-1B-Instruct-q4f16_1-MLC', model: 'https://huggingface.co/mlc-ai/Llama-3.2-1B-Instruct-q4f16_1-MLC', model_lib: 'https://example.invalid/Llama-3.2-1B-Instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm' },
    ],
  };
  browser = await launchChromium();
  context = await browser.newContext();
  node = await startServer({ engine: () => testEngine() });
  nodeClient = createClient(node.app.service, { apiKey: node.key('scale', { paid: true }) });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await node?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function openWebLLMPage(): Promise<Page> {
  return openPage(context, `${site.url}/webllm.html`, pageErrors, 'webllmCreate');
}

/** The same request through our in-process client in Node (the chat specialist's model name). */
async function onNode(request: Record<string, unknown>): Promise<{ content: string; usage: JsonObject; deltas: string }> {
  const whole = (await nodeClient.chat.completions.create({ model: 'svc-chat', ...request })) as JsonObject;
  let deltas = '';
  for await (const c of await nodeClient.chat.completions.create({ model: 'svc-chat', ...request, stream: true })) {
    deltas += ((c.choices as { delta: { content?: string } }[])[0]?.delta.content ?? '');
  }
  return { content: (whole.choices as { message: { content: string } }[])[0].message.content, usage: whole.usage as JsonObject, deltas };
}

const STATS = /^prefill: (\d+\.\d{4}) tokens\/sec, decoding: (\d+\.\d{4}) tokens\/sec$/;

/** The checks both hosts pass: progress, a whole and a streamed completion equal to Node's, an interruption, the stats line. */
async function commonChecks(p: Page, kind: 'worker' | 'service-worker', config: AppConfig): Promise<{ text: string }> {
  const created = await p.evaluate(([k, c]) => window.webllmCreate(k, 'stories260K', c), [kind, config] as const);
  const progress = created.progress;
  expect(progress.length).toBeGreaterThan(1);
  expect(progress.at(-1)).toMatchObject({ progress: 1, text: expect.stringMatching(/^Finish loading on WebGPU - /) });
  expect(progress.slice(0, -1).every((r) => r.progress < 1)).toBe(true);
  for (let i = 1; i < progress.length; i++) expect(progress[i].progress).toBeGreaterThanOrEqual(progress[i - 1].progress);
  expect(progress.every((r) => typeof r.text === 'string' && r.timeElapsed >= 0)).toBe(true);

  const node16 = await onNode(greedy);
  const whole = await p.evaluate((r) => window.webllmChat(r), greedy);
  expect(whole).toMatchObject({ object: 'chat.completion', model: 'stories260K' });
  const text = whole.choices[0].message.content!;
  expect(text.length).toBeGreaterThan(0);
  expect(text).toBe(node16.content);
  expect(whole.choices[0].finish_reason).toMatch(/^(stop|length)$/);
  expect(whole.usage).toMatchObject({ prompt_tokens: node16.usage.prompt_tokens, completion_tokens: node16.usage.completion_tokens, total_tokens: node16.usage.total_tokens });
  expect(whole.usage!.extra.decode_tokens_per_s).toBeGreaterThan(0);
  expect(whole.usage!.extra.prefill_tokens_per_s).toBeGreaterThan(0);

  const streamed = await p.evaluate((r) => window.webllmStream({ ...r, stream: true, stream_options: { include_usage: true } }), greedy);
  expect(streamed.text).toBe(text);
  expect(streamed.text).toBe(node16.deltas);
  const choiceChunks = streamed.chunks.filter((c) => c.choices.length > 0);
  expect(choiceChunks.length).toBeGreaterThan(4);
  expect(streamed.chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'stories260K')).toBe(true);
  expect(choiceChunks.at(-1)!.choices[0].finish_reason).toBe(whole.choices[0].finish_reason);
  const usageChunk = streamed.chunks.at(-1)!;
  expect(usageChunk.choices).toEqual([]);
  expect(usageChunk.usage).toMatchObject({ completion_tokens: whole.usage!.completion_tokens, prompt_tokens: whole.usage!.prompt_tokens });
  // Without include_usage there is no usage chunk and no usage field, as in WebLLM.
  const plain = await p.evaluate((r) => window.webllmStream({ ...r, stream: true }), greedy);
  expect(plain.text).toBe(text);
  expect(plain.chunks.some((c) => c.usage !== undefined || c.choices.length === 0)).toBe(false);

  // interruptGenerate() mid-stream: the stream ends early with finish_reason 'abort'; the next request is not affected.
  const long = { messages, max_tokens: 300, temperature: 0 };
  const full = await p.evaluate((r) => window.webllmChat(r), long);
  expect(full.usage!.completion_tokens).toBeGreaterThan(40);
  const cut = await p.evaluate((r) => window.webllmStream({ ...r, stream: true, stream_options: { include_usage: true } }, 3), long);
  const cutChoices = cut.chunks.filter((c) => c.choices.length > 0);
  expect(cutChoices.at(-1)!.choices[0].finish_reason).toBe('abort');
  expect(cut.chunks.at(-1)!.usage!.completion_tokens).toBeLessThan(full.usage!.completion_tokens / 2);
  expect(full.choices[0].message.content!.startsWith(cut.text)).toBe(true);
  expect(cut.text.length).toBeLessThan(full.choices[0].message.content!.length);
  expect(cut.messageAtInterrupt && cut.text.startsWith(cut.messageAtInterrupt)).toBe(true);
  expect((await p.evaluate((r) => window.webllmChat(r), greedy)).choices[0].message.content).toBe(text);

  const stats = (await p.evaluate(() => window.webllmCall('runtimeStatsText'))) as string;
  const m = STATS.exec(stats);
  expect(m, stats).not.toBeNull();
  expect(Number(m![1])).toBeGreaterThan(0);
  expect(Number(m![2])).toBeGreaterThan(0);
  console.info(`webllm ${kind}: ${stats}; loaded in ${created.ms.toFixed(0)} ms with ${progress.length} progress reports`);
  return { text };
}

describe('WebLLM pages on our engine', () => {
  it('CreateWebWorkerMLCEngine: progress to 1, completions whole and streamed equal to the Node engine, interruptGenerate, runtimeStatsText', async () => {
    const p = await openWebLLMPage();
    await commonChecks(p, 'worker', appConfig);
    // The model came through our loader (Cache Storage), and nothing of WebLLM's runtime was fetched (no model library, no MLC weights).
    expect(site.hits.get('/models/stories260K.gguf') ?? 0).toBeGreaterThan(0);
    expect([...site.hits.keys()].filter((k) => /\.wasm$|mlc-chat-config|tensor-cache|ndarray-cache/.test(k))).toEqual([]);

    // resetChat clears the statistics and the last message.
    expect(((await p.evaluate(() => window.webllmCall('getMessage'))) as string).length).toBeGreaterThan(0);
    await p.evaluate(() => window.webllmCall('resetChat'));
    expect(await p.evaluate(() => window.webllmCall('getMessage'))).toBe('');
    expect(await p.evaluate(() => window.webllmCall('runtimeStatsText'))).toBe('prefill: 0.0000 tokens/sec, decoding: 0.0000 tokens/sec');
    expect(typeof (await p.evaluate(() => window.webllmCall('getGPUVendor')))).toBe('string');
    expect(await p.evaluate(() => window.webllmCall('getMaxStorageBufferBindingSize'))).toBeGreaterThan(0);

    // Features we do not have are refused by name.
    expect(await p.evaluate(() => window.webllmError('embedding'))).toMatch(/Embeddings \(embeddings\.create\) is not supported/);
    expect(await p.evaluate(() => window.webllmError('grammar'))).toMatch(/response_format type 'grammar' \(EBNF\) is not supported/);
    expect(await p.evaluate(() => window.webllmError('multi-model'))).toMatch(/Loading several models at once is not supported/);
    // Our API's own checks: a bad streamed request fails at create(), with the API's message.
    expect(await p.evaluate(() => window.webllmError('bad-stream'))).toMatch(/400 .*max_tokens/);
    await p.screenshot({ path: join(ARTIFACTS, 'webllm-worker.png'), fullPage: true });
  }, 240_000);

  it('reload(otherId) loads another GGUF by its record; completions.create runs raw text on the engine; unload', async () => {
    const p = context.pages().find((x) => x.url().endsWith('/webllm.html'))!;
    const reloaded = await p.evaluate(() => window.webllmReload('tinystories-656k'));
    expect(reloaded.progress.at(-1)!.progress).toBe(1);
    expect(site.hits.get(`/models/${OTHER}`) ?? 0).toBeGreaterThan(0);
    const r = await p.evaluate((req) => window.webllmChat(req), greedy);
    expect(r.model).toBe('tinystories-656k');
    expect(r.choices[0].message.content).toBeTruthy();

    // Raw completion (no chat template, no specialist): the engine's own greedy text for the prompt, as in
    // Node on the page's adapter (SwiftShader): this Q8_0 model's greedy path is sensitive, and with the
    // CPU adapters' half-precision KV cache the last-bit differences between llvmpipe's and SwiftShader's
    // exp() can round a cached value to the neighbouring half.
    const nodeEngine = await testEngine(OTHER, { adapter: 'swiftshader' });
    const g = nodeEngine.generate({ prompt: 'Once upon a time', maxTokens: 12, temperature: 0 });
    for await (const _ of g);
    const expected = (await g.result).text;
    const whole = (await p.evaluate(() => window.webllmComplete({ prompt: 'Once upon a time', max_tokens: 12, temperature: 0 }))) as Completion;
    expect(whole).toMatchObject({ object: 'text_completion', model: 'tinystories-656k' });
    expect(whole.choices[0].text).toBe(expected);
    expect(whole.usage).toMatchObject({ completion_tokens: (await g.result).completionTokens });
    const streamed = (await p.evaluate(() => window.webllmComplete({ prompt: 'Once upon a time', max_tokens: 12, temperature: 0, stream: true }))) as { text: string; chunks: Completion[] };
    expect(streamed.text).toBe(expected);
    expect(streamed.chunks.at(-1)!.choices[0].finish_reason).toBe(whole.choices[0].finish_reason);

    // forwardTokensAndSample (greedy from the record's overrides): the tokens the engine generates in Node.
    const ids = nodeEngine.tokenizer.encode('Once upon a time');
    expect(await p.evaluate(([i, n]) => window.webllmForward(i, n), [ids, 5] as const)).toEqual((await g.result).tokens.slice(0, 5));
    expect(await p.evaluate(() => window.webllmCall('runtimeStatsText'))).toMatch(STATS);

    // A record pointing at MLC weights is refused by name, before anything is unloaded.
    expect(await p.evaluate(() => window.webllmError('mlc-record'))).toMatch(/svc runs GGUF files/);
    expect((await p.evaluate((req) => window.webllmChat(req), greedy)).choices[0].message.content).toBe(r.choices[0].message.content);
    await p.evaluate(() => window.webllmReload('stories260K'));
    await p.evaluate(() => window.webllmCall('unload'));
    expect(await p.evaluate(() => window.webllmError('after-unload'))).toMatch(/not loaded|load/i);
    await p.close();
  }, 240_000);

  it('CreateServiceWorkerMLCEngine: the same through WebLLM\'s service-worker handler; a second page finds the model loaded', async () => {
    const p = await openWebLLMPage();
    // No record for stories260K here: the id is svc-web.json's own model.
    const siteModelOnly = { model_list: appConfig.model_list.filter((m) => m.model_id !== 'stories260K') };
    const { text } = await commonChecks(p, 'service-worker', siteModelOnly);
    expect(await p.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${site.url}/webllm-sw.js`);
    const downloads = site.hits.get('/models/stories260K.gguf');
    // Another page of the origin: WebLLM's handler sees the model loaded and skips the reload. (Its
    // "Finish loading" report goes out under the first page's request id, so this page hears none: the
    // same with WebLLM's own engine.)
    const q = await openWebLLMPage();
    const again = await q.evaluate((c) => window.webllmCreate('service-worker', 'stories260K', c), siteModelOnly);
    expect(again.progress.every((r) => r.progress === 1)).toBe(true);
    expect(site.hits.get('/models/stories260K.gguf')).toBe(downloads);
    expect((await q.evaluate((r) => window.webllmChat(r), greedy)).choices[0].message.content).toBe(text);
    await p.screenshot({ path: join(ARTIFACTS, 'webllm-service-worker.png'), fullPage: true });
    const constructMs = await p.evaluate(() => window.webllmMLCEngineConstructMs());
    console.info(`webllm: bundles ${['webllm-worker.js', 'webllm-sw.js', 'web-llm.js'].map((f) => `${f} ${(statSync(join(dir, f)).size / 1e6).toFixed(2)} MB`).join(', ')}; new MLCEngine() in ${constructMs.toFixed(1)} ms`);
    expect(pageErrors).toEqual([]);
  }, 240_000);
});
