/** `svc web build` as a user runs it: the static site's files, its svc-web.json, and clear refusals. */
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseWebConfig } from '../../adapters/service-worker/web-config.ts';
import { sharedModel } from '../helpers/models.ts';
import { runCli } from './helpers/cli.ts';

describe('svc web build', () => {
  it('writes the page, the service worker, its fallback, the config and the model', async () => {
    const out = mkdtempSync(join(tmpdir(), 'svc-web-'));
    const r = await runCli(['web', 'build', '--out', out, '--model', sharedModel('stories260K.gguf'), '--plan', 'professional']);
    expect(r.code, r.stderr).toBe(0);
    for (const f of ['index.html', 'playground.js', 'style.css', 'sw.js', 'worker.js', 'svc-web.json', 'models/stories260K.gguf']) expect(existsSync(join(out, f)), f).toBe(true);
    expect(statSync(join(out, 'models/stories260K.gguf')).size).toBe(statSync(sharedModel('stories260K.gguf')).size);
    const config = parseWebConfig(JSON.parse(readFileSync(join(out, 'svc-web.json'), 'utf8')), 'svc-web.json');
    expect(config.model).toEqual({ url: 'models/stories260K.gguf', id: 'stories260K' });
    expect(config.account.plan).toBe('professional');
    expect(config.specialists.map((s) => s.name)).toEqual(['chat.json', 'classify.json', 'code.json', 'extract.json', 'qa.json', 'summarise.json']);
    expect(r.stdout).toContain('python3 -m http.server');
  }, 60_000);

  it('references a model URL instead of copying, and refuses an unknown plan or a missing file by name', async () => {
    const out = mkdtempSync(join(tmpdir(), 'svc-web-'));
    const url = 'https://models.example.com/SmolLM2-135M-Instruct-Q8_0.gguf';
    const ok = await runCli(['web', 'build', '--out', out, '--model', url]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'svc-web.json'), 'utf8')).model.url).toBe(url);
    expect(existsSync(join(out, 'models'))).toBe(false);
    const plan = await runCli(['web', 'build', '--out', out, '--model', url, '--plan', 'gold']);
    expect(plan.code).not.toBe(0);
    expect(plan.stderr).toContain('--plan gold: no such plan');
    const missing = await runCli(['web', 'build', '--out', out, '--model', '/nowhere/model.gguf']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('--model /nowhere/model.gguf');
  }, 60_000);
});
