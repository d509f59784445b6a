/** `svc generate`, `tokenize` and `doctor` as a user runs them: a child process, stdout and exit code. */
import { describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedModel } from '../helpers/models.ts';
import { runCli } from './helpers/cli.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/llama-greedy.json', import.meta.url), 'utf8')) as Record<string, { prompt: string; text: string; fullText: string; greedy: number[]; promptTokens: number[] }[]>;
const STORIES = sharedModel('stories260K.gguf');

describe('svc generate', () => {
  it('streams exactly the story llama.cpp writes, and nothing else, to stdout', async () => {
    const f = fixtures['stories260K.gguf'][0];
    const r = await runCli(['generate', '--model', STORIES, '--temperature', '0', '--max-tokens', String(f.greedy.length), f.prompt]);
    expect(r.code).toBe(0);
    // The continuation of the prompt as llama.cpp detokenizes prompt + continuation together.
    expect(f.prompt + r.stdout).toBe(f.fullText.replace(/^ /, '') + '\n');
    expect(r.stderr).toContain('loading weights');
  });

  it('rejects a bad option or model with a message naming it and a non-zero exit', async () => {
    const bad = await runCli(['generate', '--model', STORIES, '--temperature', 'hot', 'x']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--temperature must be a number/);
    const missing = await runCli(['generate', '--model', '/nonexistent/model.gguf', 'x']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/not found.*\/nonexistent\/model\.gguf|\/nonexistent\/model\.gguf.*not found/);
    const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
    const text = join(dir, 'notes.gguf');
    writeFileSync(text, 'this is not a model at all');
    const notGguf = await runCli(['generate', '--model', text, 'x']);
    expect(notGguf.code).not.toBe(0);
    expect(notGguf.stderr).toMatch(/not a GGUF file/);
  });
});

describe('svc tokenize', () => {
  it('prints llama.cpp token ids as one JSON line', async () => {
    const f = fixtures['stories260K.gguf'][2];
    const r = await runCli(['tokenize', '--model', STORIES, f.prompt]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(JSON.stringify(f.promptTokens) + '\n');
    const noBos = await runCli(['tokenize', '--model', STORIES, '--no-bos', f.prompt]);
    expect(JSON.parse(noBos.stdout)).toEqual(f.promptTokens.slice(1));
  });
});

describe('svc doctor', () => {
  it('reports the chosen adapter, its features and limits, and why others were skipped', async () => {
    const r = await runCli(['doctor', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { chosen: string; why: string; skipped: { name: string; reason: string }[]; limits: Record<string, number>; adapterFeatures: string[]; engineUses: { packedDot: boolean } };
    expect(['gpu', 'swiftshader', 'llvmpipe']).toContain(report.chosen);
    // Without a GPU the faster software adapter comes first, and doctor says so.
    if (report.chosen !== 'gpu') expect(report.chosen).toBe('llvmpipe');
    expect(report.why).toMatch(report.chosen === 'gpu' ? /real GPU/ : /faster software adapter/);
    expect(report.limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
    // Dawn offers WGSL's packed integer dot products on every backend (the GPU's Q8_0 products use them).
    expect(report.engineUses.packedDot).toBe(true);
    if (report.chosen !== 'gpu') expect(report.skipped.map((s) => s.name)).toContain('gpu');
    for (const s of report.skipped) expect(s.reason.length).toBeGreaterThan(10);
    const forced = await runCli(['doctor', '--json', '--adapter', 'llvmpipe']);
    expect(JSON.parse(forced.stdout).chosen).toBe('llvmpipe');
    expect(JSON.parse(forced.stdout).why).toMatch(/forced/);
    const wrong = await runCli(['doctor', '--adapter', 'quantum']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/--adapter "quantum" is not one of/);
  });
});
