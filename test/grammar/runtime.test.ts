/**
 * xgrammar itself: loading in Node (the Node loader) and from bundles (the default loader, as browsers
 * and bundled servers use it), and what happens when it aborts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { GrammarInputError, xgrammarRuntime } from '../../engine/grammar/index.ts';
import { loadXGrammarInNode } from '../../engine/grammar/xgrammar-node.ts';
import './helpers.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';

/** A module using only the public grammar API on a made-up 9-token vocabulary. */
const ENTRY = `
import { compileGrammar } from '${ROOT}engine/grammar/index.ts';
const enc = new TextEncoder();
const texts = ['{', '}', '"', 'a', ':', ' ', ',', '1', ''];
const tok = { vocabSize: 9, tokenBytes: (i) => enc.encode(texts[i]), tokenText: (i) => texts[i] || '</s>',
  isEndOfGeneration: (i) => i === 8, isControl: (i) => i === 8 };
export async function run() {
  const g = await compileGrammar(tok, { type: 'json_object' });
  const c = await g.createConstraint({ maxTokens: 30 });
  let text = '', r = 7;
  while (!c.isDone()) {
    const m = c.mask(), ok = [];
    for (let i = 0; i < 9; i++) if (m[0] & (1 << i)) ok.push(i);
    r = (r * 1103515245 + 12345) >>> 0;
    const t = ok[r % ok.length];
    c.accept(t);
    text += texts[t];
  }
  return text;
}
`;

function entryFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-grammar-bundle-'));
  const file = join(dir, 'entry.js');
  writeFileSync(file, ENTRY);
  return file;
}

describe('xgrammar runtime', () => {
  it('loads once in Node through the Node loader, in well under a second', async () => {
    const rt = await xgrammarRuntime();
    expect(rt.api.GrammarCompiler).toBeTypeOf('function');
    expect(await xgrammarRuntime()).toBe(rt);
    console.info(`xgrammar load + wasm start: ${rt.loadMs.toFixed(1)} ms`);
    expect(rt.loadMs).toBeLessThan(5000);
  });

  it('without the Node loader, unbundled Node gets an error that says what to do', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-grammar-noloader-'));
    const script = join(dir, 'main.mts');
    writeFileSync(script, `const m = await import(${JSON.stringify(`${ROOT}engine/grammar/xgrammar.ts`)});\nawait m.xgrammarRuntime().then(() => process.stdout.write('loaded'), (e) => process.stdout.write(e.message));\n`);
    const out = execFileSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', cwd: ROOT });
    expect(out).toMatch(/^@mlc-ai\/web-xgrammar failed to load \(require is not defined/);
    expect(out).toContain('import engine/grammar/xgrammar-node.ts once first');
  });

  it('each Node load is an independent instance (what recovery after an abort needs)', async () => {
    const a = await loadXGrammarInNode();
    const b = await loadXGrammarInNode();
    expect(a).not.toBe(b);
  });

  it('turns an abort into an error carrying xgrammar’s own message, and moves on to a fresh instance', async () => {
    const rt = await xgrammarRuntime();
    await expect(
      rt.run(
        (api) => api.Grammar.fromEBNF('root ::= "a" undefined_rule'),
        (m) => new GrammarInputError(`grammar: ${m}`, 'grammar'),
      ),
    ).rejects.toThrow(/grammar: EBNF parser error at line 1, column \d+: Rule "undefined_rule" is not defined/);
    expect(rt.tainted).toBe(true);
    const next = await xgrammarRuntime();
    expect(next).not.toBe(rt);
    expect(next.tainted).toBe(false);
    const g = await next.api.Grammar.fromEBNF('root ::= "a"');
    expect(g.toString()).toContain('root');
  });

  it('bundles for the browser with esbuild (url and module external: Node-only branches of the UMD)', async () => {
    const r = await build({ entryPoints: [entryFile()], bundle: true, platform: 'browser', format: 'esm', write: false, metafile: true, logLevel: 'silent', external: ['url', 'module'] });
    const inputs = Object.keys(r.metafile!.inputs);
    expect(inputs.some((p) => p.endsWith('web-xgrammar/lib/index.js'))).toBe(true);
    expect(inputs.filter((p) => p.includes('-node.ts') || p.startsWith('node:'))).toEqual([]);
    expect(r.outputFiles[0].text).toContain('data:application/octet-stream;base64'); // the wasm travels inside
  });

  it.skipIf(!existsSync(CHROMIUM))('runs in headless Chromium from that bundle', async () => {
    const r = await build({ entryPoints: [entryFile()], bundle: true, platform: 'browser', format: 'esm', write: false, logLevel: 'silent', external: ['url', 'module'] });
    const js = r.outputFiles[0].text;
    const server = createServer((req, res) => {
      if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script type="module">import { run } from "/b.js"; window.out = run().catch((e) => "ERROR " + e);</script>');
      else if (req.url === '/b.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
      else res.writeHead(404).end();
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--disable-gpu', '--disable-quic'] });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      await page.waitForFunction(() => (window as unknown as { out?: unknown }).out !== undefined);
      const text = await page.evaluate(() => (window as unknown as { out: Promise<string> }).out);
      expect(errors).toEqual([]);
      expect(() => JSON.parse(text), text).not.toThrow();
    } finally {
      await browser.close();
      server.close();
    }
  });

  it('runs from a CommonJS and from an ES-module Node bundle through the default loader', async () => {
    const entry = entryFile();
    const dir = mkdtempSync(join(tmpdir(), 'svc-grammar-out-'));
    const banner = "import { createRequire as __cr } from 'node:module'; import { fileURLToPath as __fu } from 'node:url'; const require = __cr(import.meta.url); const __filename = __fu(import.meta.url);";
    for (const [format, file, js] of [['cjs', 'b.cjs', ''], ['esm', 'b.mjs', banner]] as const) {
      const out = join(dir, file);
      await build({ entryPoints: [entry], bundle: true, platform: 'node', format, outfile: out, logLevel: 'silent', banner: { js } });
      const load = format === 'cjs' ? `Promise.resolve(require(${JSON.stringify(out)}))` : `import(${JSON.stringify(out)})`;
      const text = execFileSync(process.execPath, ['-e', `${load}.then((m) => m.run()).then((t) => process.stdout.write(t))`], { encoding: 'utf8' });
      expect(() => JSON.parse(text), `${format}: ${text}`).not.toThrow();
      expect(text.startsWith('{')).toBe(true);
    }
  });
});
