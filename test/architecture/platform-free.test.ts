/**
 * The protocol, the engine, the in-process client, the WebSocket client helper and the in-browser service
 * (service worker, dedicated worker, page side) run outside Node:
 * bundled for the browser platform they must not pull in any Node built-in, and protocol/ must not use
 * Node's Buffer global.
 * Only xgrammar's own Node branch names `url` and `module` (it never runs in a browser).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { rawPlugin } from '../../build/esbuild-raw.ts';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);

function tsFilesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? tsFilesUnder(p) : name.endsWith('.ts') ? [p] : [];
  });
}

describe('platform-free protocol and engine', () => {
  it('bundle for the browser with no Node built-in', async () => {
    const result = await build({
      entryPoints: [join(ROOT, 'protocol/service.ts'), join(ROOT, 'engine/browser.ts'), join(ROOT, 'adapters/in-process/client.ts'), join(ROOT, 'adapters/ws/client.ts'), join(ROOT, 'adapters/service-worker/sw.ts'), join(ROOT, 'adapters/service-worker/dedicated-worker.ts'), join(ROOT, 'adapters/service-worker/page.ts')],
      bundle: true,
      write: false,
      outdir: join(ROOT, '.bundle-check'),
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      plugins: [rawPlugin],
      external: ['url', 'module'],
      logLevel: 'silent',
      metafile: true,
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((f) => f.startsWith('protocol/'))).toBe(true);
    expect(inputs.some((f) => f.startsWith('engine/'))).toBe(true);
    const nodeOnly = inputs.filter((f) => /(^|\/)node:|-node\.ts$|\/node\.ts$/.test(f));
    expect(nodeOnly).toEqual([]);
  });

  it('protocol/ uses no Buffer and imports no node: module', () => {
    const offenders = tsFilesUnder(join(ROOT, 'protocol')).filter((f) => /\bBuffer\b|from 'node:/.test(readFileSync(f, 'utf8').replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it('the bundle check fails on a Node built-in', async () => {
    const bad = build({ stdin: { contents: "import { readFileSync } from 'node:fs'; console.log(readFileSync);", resolveDir: ROOT }, bundle: true, write: false, platform: 'browser', logLevel: 'silent' });
    await expect(bad).rejects.toThrow();
  });
});
