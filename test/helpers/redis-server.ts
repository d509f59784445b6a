/**
 * A real Redis for tests: Debian's redis-server in a temporary folder on a free loopback port, no
 * persistence; stop() and start() again on the same port (for outage tests). `available` is false
 * where the binary is absent, so the tests that need it skip with a clear message.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

export const REDIS_BINARY = process.env.SVC_REDIS_SERVER ?? '/usr/bin/redis-server';
export const redisAvailable = spawnSync(REDIS_BINARY, ['--version']).status === 0;
export const REDIS_MISSING = `redis-server not found at ${REDIS_BINARY} (scripts/install.sh installs it; SVC_REDIS_SERVER overrides)`;

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(REDIS_BINARY, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], { stdio: 'ignore' });
    await waitForPort(port, true);
  };
  const stop = async () => {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    await waitForPort(port, false);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    stop,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, open: boolean): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = createConnection({ port, host: '127.0.0.1' });
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up === open) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`redis on port ${port} did not ${open ? 'start' : 'stop'}`);
}
