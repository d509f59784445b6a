/**
 * The static site of the in-browser service (`svc web build`): the playground page, the service worker
 * (sw.js) and its dedicated-worker fallback (worker.js), bundled with esbuild, and svc-web.json with the
 * model's URL, the local account's plan, and the plans and specialists read from the repository (as
 * `svc serve` reads them). A model given as a file is copied into the site; a URL is referenced.
 */
import { build, type Plugin } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PLANS_PATH, DEFAULT_SPECIALISTS_DIR, loadPlans, loadSpecialists, packageVersion } from '../adapters/config-node.ts';
import { parseWebConfig, WEB_CONFIG_FILE, type WebConfig } from '../adapters/service-worker/web-config.ts';
import { rawPlugin } from './esbuild-raw.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const WORKER_ENTRIES = {
  'sw.js': fileURLToPath(new URL('../adapters/service-worker/sw.ts', import.meta.url)),
  'worker.js': fileURLToPath(new URL('../adapters/service-worker/dedicated-worker.ts', import.meta.url)),
};

export interface WebSiteOptions {
  out: string;
  /** A GGUF file (copied into `models/`) or an http(s) URL, absolute or relative to the site. */
  model: string;
  account?: WebConfig['account'];
  engine?: WebConfig['engine'];
  plansPath?: string;
  specialistsDir?: string;
  /** Write the playground page (index.html and its assets); default true. */
  page?: boolean;
  /** Also write the WebLLM hosts (webllm-worker.js, webllm-sw.js + web-llm.js; docs/webllm.md); default false. */
  webllm?: boolean;
  minify?: boolean;
}

export async function buildWebSite(opts: WebSiteOptions): Promise<{ files: string[] }> {
  mkdirSync(opts.out, { recursive: true });
  const written: string[] = [];
  const write = (name: string, body: string | Uint8Array) => {
    mkdirSync(join(opts.out, name, '..'), { recursive: true });
    writeFileSync(join(opts.out, name), body);
    written.push(name);
  };

  const model = placeModel(opts.model, opts.out);
  if (model.copied) written.push(model.url);
  const config = siteConfig({ ...opts, modelUrl: model.url });
  write(WEB_CONFIG_FILE, JSON.stringify(config, null, 1) + '\n');

  for (const [name, js] of Object.entries(await bundleWorkers(opts.minify ?? true))) write(name, js);
  if (opts.webllm) for (const [name, js] of Object.entries(await bundleWebLLMHosts())) write(name, js);
  if (opts.page ?? true) {
    const { buildPlayground } = await import('./playground.ts');
    const page = await buildPlayground({ mode: 'browser' });
    for (const [name, f] of Object.entries(page.files)) write(name, f.body);
  }
  return { files: written };
}

/** sw.js and worker.js: classic scripts (module service workers cannot import() and some browsers lack them). */
export async function bundleWorkers(minify: boolean): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, entry] of Object.entries(WORKER_ENTRIES)) {
    const result = await build({
      entryPoints: [entry],
      bundle: true,
      format: 'iife',
      platform: 'browser',
      target: 'es2022',
      write: false,
      minify,
      plugins: [rawPlugin],
      // xgrammar's Node branch; never taken in a browser.
      external: ['url', 'module'],
      logLevel: 'error',
    });
    out[name] = result.outputFiles[0].text;
  }
  return out;
}

/**
 * WebLLM's handlers hosting our engine: a dedicated-worker script, and a module service worker whose
 * WebLLM part is a file of its own (`web-llm.js`): Chromium refuses a service worker script over about
 * 6.5 MB where its script cache is in memory (incognito windows), and WebLLM alone is 6.1 MB minified.
 */
export async function bundleWebLLMHosts(): Promise<Record<string, string>> {
  const webllmApart: Plugin = { name: 'web-llm-apart', setup: (b) => b.onResolve({ filter: /^@mlc-ai\/web-llm$/ }, () => ({ path: './web-llm.js', external: true })) };
  const one = async (input: { entry: string } | { stdin: string }, format: 'esm' | 'iife', plugins: Plugin[] = []) => {
    const result = await build({
      ...('entry' in input ? { entryPoints: [input.entry] } : { stdin: { contents: input.stdin, resolveDir: ROOT, loader: 'ts' as const } }),
      bundle: true,
      format,
      platform: 'browser',
      target: 'es2022',
      write: false,
      minify: true,
      plugins: [rawPlugin, ...plugins],
      external: ['url', 'module'],
      logLevel: 'error',
    });
    return result.outputFiles[0].text;
  };
  const [worker, sw, webllm] = await Promise.all([
    one({ entry: join(ROOT, 'adapters/webllm/worker-host.ts') }, 'iife'),
    one({ entry: join(ROOT, 'adapters/webllm/service-worker-host.ts') }, 'esm', [webllmApart]),
    one({ stdin: "export * from '@mlc-ai/web-llm';" }, 'esm'),
  ]);
  return { 'webllm-worker.js': worker, 'webllm-sw.js': sw, 'web-llm.js': webllm };
}

function siteConfig(opts: WebSiteOptions & { modelUrl: string }): WebConfig {
  const plansPath = opts.plansPath ?? DEFAULT_PLANS_PATH;
  const specialistsDir = opts.specialistsDir ?? DEFAULT_SPECIALISTS_DIR;
  // Parsed here too, so a mistake fails the build rather than the visitor's page.
  const plans = loadPlans(plansPath);
  loadSpecialists(specialistsDir);
  const account = opts.account ?? { plan: 'scale' };
  if (!plans.get(account.plan)) throw new Error(`--plan ${account.plan}: no such plan in ${plansPath} (plans: ${plans.ids().join(', ')})`);
  const specialists = readdirSync(specialistsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((name) => ({ name, text: readFileSync(join(specialistsDir, name), 'utf8') }));
  const raw = {
    model: { url: opts.modelUrl, id: basename(opts.modelUrl).replace(/\.gguf$/i, '') },
    account,
    plans: JSON.parse(readFileSync(plansPath, 'utf8')),
    specialists,
    version: packageVersion(),
    engine: opts.engine ?? {},
  };
  return parseWebConfig(raw, WEB_CONFIG_FILE);
}

function placeModel(model: string, out: string): { url: string; copied: boolean } {
  if (/^https?:\/\//i.test(model)) return { url: model, copied: false };
  if (existsSync(model) && statSync(model).isFile()) {
    const name = `models/${basename(model)}`;
    mkdirSync(join(out, 'models'), { recursive: true });
    copyFileSync(model, join(out, name));
    return { url: name, copied: true };
  }
  // Not a file here: a path on the site the operator will put the model at.
  if (!model.startsWith('/') && /\.gguf$/i.test(model)) return { url: model, copied: false };
  throw new Error(`--model ${model}: no such file, and not an http(s) URL or a .gguf path relative to the site`);
}
