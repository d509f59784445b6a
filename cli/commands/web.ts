/**
 * `svc web build --out <dir> [--model <url-or-file>]`: writes the playground as a static site that runs
 * the whole service in the visitor's browser (service worker + WebGPU); serve the folder with any static
 * file server on localhost or https.
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { buildWebSite } from '../../build/web-site.ts';
import { DEFAULT_MODEL } from './serve.ts';

interface WebBuildOptions {
  out: string;
  model?: string;
  plan: string;
  rpm?: string;
  monthly?: string;
  context?: string;
  webllm?: boolean;
}

export function registerWeb(program: Command): void {
  const web = program.command('web').description('the service as a static site that runs in the browser');
  web
    .command('build')
    .description('write the playground, the service worker and svc-web.json into a folder')
    .requiredOption('--out <dir>', 'folder to write the site into')
    .option('--model <url-or-file>', `GGUF URL (same origin or CORS), or a file to copy into the site (default: $SVC_MODEL, else ${DEFAULT_MODEL})`)
    .option('--plan <id>', "the local account's plan (config/plans.json)", 'scale')
    .option('--rpm <n>', 'requests per minute, for plans with per-account limits')
    .option('--monthly <n>', 'requests per month, for plans with per-account limits')
    .option('--context <tokens>', 'context window to run with (default: the engine default)')
    .option('--webllm', "also write WebLLM's worker hosts running our engine (webllm-worker.js, webllm-sw.js, web-llm.js; docs/webllm.md)")
    .action(async (opts: WebBuildOptions) => {
      const model = opts.model ?? process.env.SVC_MODEL ?? DEFAULT_MODEL;
      const out = resolve(opts.out);
      const positive = (flag: string, v: string | undefined) => {
        if (v === undefined) return undefined;
        if (!/^[1-9]\d*$/.test(v)) throw new Error(`${flag} must be a positive integer, got "${v}"`);
        return Number(v);
      };
      const { files } = await buildWebSite({
        out,
        model,
        account: { plan: opts.plan, rpmLimit: positive('--rpm', opts.rpm), monthlyLimit: positive('--monthly', opts.monthly) },
        engine: { contextLength: positive('--context', opts.context) },
        webllm: opts.webllm,
      });
      process.stdout.write(`wrote ${files.length} files to ${out}:\n${files.map((f) => `  ${f}`).join('\n')}\nserve it with any static file server, e.g. python3 -m http.server -d ${opts.out} 8000, and open http://localhost:8000/\n`);
    });
}
