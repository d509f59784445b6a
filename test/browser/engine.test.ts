/**
 * The engine in a real browser: bundled with esbuild (no Node-only code may be in it), served with a model
 * from a local HTTP server, run in headless Chromium on its WebGPU adapter, and compared token for token
 * with the same greedy generation in Node and with llama.cpp.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import { createServer, type Server } from 'node:http';
import { readFileSync, statSync, createReadStream } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { rawPlugin } from '../../build/esbuild-raw.ts';
import { testEngine } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/llama-greedy.json', import.meta.url), 'utf8')) as Record<string, { promptTokens: number[]; greedy: number[] }[]>;
const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';

let server: Server;
let base: string;
let browser: Browser;

beforeAll(async () => {
  const bundle = await build({
    entryPoints: [new URL('./entry.ts', import.meta.url).pathname],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    plugins: [rawPlugin],
    logLevel: 'silent',
  });
  const js = bundle.outputFiles[0].text;
  const modelPath = sharedModel('stories260K.gguf');
  const modelSize = statSync(modelPath).size;
  server = createServer((req, res) => {
    if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script type="module" src="/bundle.js"></script>');
    } else if (req.url === '/bundle.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    } else if (req.url === '/model.gguf') {
      const m = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
      if (m) {
        const start = Number(m[1]);
        const end = m[2] ? Math.min(Number(m[2]), modelSize - 1) : modelSize - 1;
        res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${modelSize}`, 'content-length': end - start + 1, 'accept-ranges': 'bytes' });
        createReadStream(modelPath, { start, end }).pipe(res);
      } else {
        res.writeHead(200, { 'content-length': modelSize, 'accept-ranges': 'bytes' });
        createReadStream(modelPath).pipe(res);
      }
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--enable-unsafe-webgpu', '--disable-gpu', '--disable-quic'] });
});

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
});

describe('engine in headless Chromium', () => {
  it('generates the same greedy tokens as in Node and as llama.cpp', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(base + '/');
    await page.waitForFunction(() => typeof window.svcGreedy === 'function');
    const f = fixtures['stories260K.gguf'][0];
    const inBrowser = await page.evaluate(([url, tokens, n]) => window.svcGreedy(url, tokens, n), [`${base}/model.gguf`, f.promptTokens, 32] as [string, number[], number]);
    expect(errors).toEqual([]);
    const engine = await testEngine();
    const inNode = await engine.generate({ tokens: f.promptTokens, maxTokens: 32, temperature: 0, stopAtEndOfGeneration: false }).result;
    expect(inBrowser.tokens).toEqual(inNode.tokens);
    expect(inBrowser.tokens).toEqual(f.greedy.slice(0, 32));
    expect(inBrowser.text).toBe(inNode.text);
    await page.close();
  });
});
