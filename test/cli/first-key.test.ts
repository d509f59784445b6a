/** A first `svc serve` on an empty data folder makes one key and prints it once; later starts print nothing. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startServe, type Served } from './helpers/cli.ts';

const started: Served[] = [];
afterEach(() => {
  for (const s of started.splice(0)) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
});

/** What the process wrote to stdout so far (it is not read by anything else). */
function stdoutOf(s: Served): string {
  let text = '';
  let chunk: Buffer | null;
  while ((chunk = s.proc.stdout!.read() as Buffer | null) !== null) text += chunk.toString('utf8');
  return text;
}

describe('first start', () => {
  it('makes a paid key on the first start, prints it once, and it works', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-first-'));
    const first = await startServe(dir);
    started.push(first);
    const out = stdoutOf(first);
    expect(out).toContain('shown only this once');
    const key = out.trimEnd().split('\n').pop()!;
    expect(key).toMatch(/^svc_live_[A-Za-z0-9]{32}$/);
    const models = await fetch(`${first.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(models.status).toBe(200);
    expect(((await models.json()) as { data: unknown[] }).data).toHaveLength(6);
    first.proc.kill('SIGTERM');
    await first.exited;

    const again = await startServe(dir);
    started.push(again);
    expect(stdoutOf(again)).toBe('');
    const listed = await runCli(['keys', 'list', '--json', '--data', dir]);
    expect((JSON.parse(listed.stdout) as unknown[]).length).toBe(1);
  }, 120_000);
});
