/** Small things users hit on the command line: option values checked and listed, the port before the model, --stop. */
import { mkdtempSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedModel } from '../helpers/models.ts';
import { runCli } from './helpers/cli.ts';

const STORIES = sharedModel('stories260K.gguf');
const dataDir = () => mkdtempSync(join(tmpdir(), 'svc-small-'));

describe('svc serve refuses bad settings before the model loads', () => {
  it('lists the valid --log-level values (flag or $SVC_LOG_LEVEL)', async () => {
    const flag = await runCli(['serve', '--log-level', 'loud', '--data', dataDir()]);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('--log-level must be one of fatal, error, warn, info, debug, trace, silent');
    const env = await runCli(['serve', '--data', dataDir()], { SVC_LOG_LEVEL: 'loud' });
    expect(env.code).toBe(1);
    expect(env.stderr).toContain('$SVC_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")');
    for (const r of [flag, env]) expect(r.stderr).not.toContain('loading model');
  }, 60_000);

  it('lists the valid --adapter values (flag or $SVC_ADAPTER)', async () => {
    const flag = await runCli(['serve', '--adapter', 'cuda', '--data', dataDir()]);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('--adapter must be one of auto, gpu, swiftshader, llvmpipe');
    const env = await runCli(['serve', '--data', dataDir()], { SVC_ADAPTER: 'cuda' });
    expect(env.code).toBe(1);
    expect(env.stderr).toContain('$SVC_ADAPTER must be one of auto, gpu, swiftshader, llvmpipe (got "cuda")');
    for (const r of [flag, env]) expect(r.stderr).not.toContain('loading model');
  }, 60_000);

  it('reports a port in use at once, without loading the model', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const r = await runCli(['serve', '--model', STORIES, '--port', String(port), '--data', dataDir()]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${port} (--host, --port)`);
      expect(r.stderr).toContain('EADDRINUSE');
      expect(r.stderr).not.toContain('loading model');
    } finally {
      holder.close();
    }
  }, 60_000);
});

describe('svc generate --stop', () => {
  const generate = (...args: string[]) => runCli(['generate', '--model', STORIES, '--temperature', '0', '--max-tokens', '20', ...args]);

  it('takes one string per --stop, so the prompt after it stays the prompt', async () => {
    const full = await generate('Once upon a time');
    expect(full.code).toBe(0);
    expect(full.stdout).toContain('Lily');

    const r = await generate('--stop', 'upon', '--stop', 'Lily', 'Once upon a time');
    expect(r.code, r.stderr).toBe(0);
    // "upon" is in the prompt, not in the generated text: only "Lily" stops it.
    expect(r.stdout).toBe(`${full.stdout.slice(0, full.stdout.indexOf('Lily'))}\n`);
    expect(r.stdout.length).toBeGreaterThan(5);
  }, 60_000);

  it('never matches across the prompt and the generated text', async () => {
    const full = await generate('Once upon a time');
    // The greedy continuation starts with ",", so "time," spans the prompt's end and the first token.
    expect(full.stdout.startsWith(',')).toBe(true);
    const r = await generate('--stop', 'time,', 'Once upon a time');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(full.stdout);
  }, 60_000);
});
