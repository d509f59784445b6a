/**
 * The playground page (web/playground) bundled with esbuild: index.html, playground.js and style.css,
 * in memory. `server` mode talks to the origin's API with a key the visitor gives; `browser` mode runs
 * the service in the visitor's browser (adapters/service-worker) and is what `svc web build` writes.
 */
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { rawPlugin } from './esbuild-raw.ts';

const DIR = fileURLToPath(new URL('../web/playground/', import.meta.url));

export interface PageFile {
  type: string;
  body: string;
}

export async function buildPlayground(opts: { mode: 'server' | 'browser' }): Promise<{ files: Record<string, PageFile> }> {
  const result = await build({
    entryPoints: [`${DIR}main.ts`],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    minify: true,
    define: { __SVC_MODE__: JSON.stringify(opts.mode) },
    plugins: [rawPlugin],
    external: ['url', 'module'],
    logLevel: 'error',
  });
  return {
    files: {
      'index.html': { type: 'text/html; charset=utf-8', body: readFileSync(`${DIR}index.html`, 'utf8') },
      'playground.js': { type: 'text/javascript; charset=utf-8', body: result.outputFiles[0].text },
      'style.css': { type: 'text/css; charset=utf-8', body: readFileSync(`${DIR}style.css`, 'utf8') },
    },
  };
}
