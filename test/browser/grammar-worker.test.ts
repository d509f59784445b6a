/**
 * Grammar workers in a real browser: the sandbox is a module Worker (worker-browser.ts bundled on its
 * own), a grammar past the time budget is refused while the page's main thread keeps running, and the
 * grammars the sandbox passed are matched on the page (which may not block on a worker).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
let server: Server;
let base: string;
let browser: Browser;

/** `url` and `module` only appear in xgrammar's Node branch (see test/grammar/runtime.test.ts). */
async function bundle(entry: string): Promise<string> {
  const out = await build({ entryPoints: [new URL(entry, import.meta.url).pathname], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'silent', external: ['url', 'module'] });
  return out.outputFiles[0].text;
}

beforeAll(async () => {
  const [page, worker] = await Promise.all([bundle('./grammar-entry.ts'), bundle('../../engine/grammar/isolated/worker-browser.ts')]);
  server = createServer((req, res) => {
    const js = { '/page.js': page, '/grammar-worker.js': worker }[req.url ?? ''];
    if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script type="module" src="/page.js"></script>');
    else if (js) res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--disable-gpu'] });
});

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => server?.close(r));
});

describe('grammar workers in headless Chromium', () => {
  it('refuse a grammar past the budget in a Worker while the page runs on, then constrain generation on the page', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${base}/`);
    await page.waitForFunction(() => typeof window.svcGrammarWorkers === 'function');
    const r = await page.evaluate(() => window.svcGrammarWorkers());
    expect(errors).toEqual([]);
    expect(r.crossOriginIsolated).toBe(false);
    expect(r.slowError).toMatch(/^schema: compiling it took longer than the 1500 ms budget/);
    expect(r.slowMs).toBeLessThan(1500 + 3000);
    // Blocked by the compile, the page would get no tick for the whole 1.5 s.
    expect(r.gap).toBeLessThan(750);
    expect(typeof JSON.parse(r.json)).toBe('object');
    console.info(`browser: slow grammar refused after ${r.slowMs.toFixed(0)} ms; page's longest pause ${r.gap.toFixed(1)} ms, ${(r.tickRatio * 100).toFixed(0)}% of its timer ticks; output ${r.json}`);
  });
});
