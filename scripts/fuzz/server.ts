/**
 * The server under test: keys made with the CLI on a fresh data folder (before the server starts), then
 * `svc serve --port 0` as a child process, its JSON log watched for the address and for errors.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { onJsonLogLines } from '../lib/json-log-lines.ts';
import { BIN, ROOT, runCli } from '../lib/run-svc.ts';
import type { Keys } from './cases.ts';

export { ROOT };

const HIGH = ['--rpm', '100000000', '--monthly', '1000000000'];

async function must(args: string[]): Promise<string> {
  const r = await runCli(args);
  if (r.code !== 0) throw new Error(`svc ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout.trimEnd().split('\n').pop()!;
}

/** One paid account per plan (enterprise with limits no run reaches), a sandbox key and a revoked key. */
export async function makeKeys(dataDir: string): Promise<Keys> {
  const create = async (plan: string) => {
    const key = await must(['keys', 'create', '--data', dataDir, '--plan', plan, ...(plan === 'enterprise' ? HIGH : [])]);
    await must(['plan', 'set', key, plan, '--paid', '--data', dataDir, ...(plan === 'enterprise' ? HIGH : [])]);
    return key;
  };
  const main = await create('enterprise');
  const professional = await create('professional');
  const starter = await create('starter');
  const solo = await create('solo');
  const sandbox = await must(['keys', 'create', '--data', dataDir, '--account', main, '--test']);
  const revoked = await must(['keys', 'create', '--data', dataDir, '--account', main]);
  await must(['keys', 'revoke', revoked, '--data', dataDir]);
  return { main, professional, starter, solo, sandbox, revoked };
}

export interface Served {
  proc: ChildProcess;
  url: string;
  /** Log lines at level error or fatal (pino 50+), as logged. */
  errors: Record<string, unknown>[];
  /** Set once the process exits. */
  exit: { code: number | null; signal: string | null } | undefined;
  /** The last stderr text, for a report when it dies. */
  tail: () => string;
}

export function startServer(dataDir: string, model: string, extraArgs: string[] = [], timeoutMs = 180_000): Promise<Served> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--data', dataDir, '--model', model, ...extraArgs], {
    cwd: ROOT,
    env: { ...process.env, SVC_GRAMMAR_COMPILE_MS: process.env.SVC_GRAMMAR_COMPILE_MS ?? '1000' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let tail = '';
  const served: Served = { proc, url: '', errors: [], exit: undefined, tail: () => tail };
  proc.on('exit', (code, signal) => (served.exit = { code, signal }));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`serve did not listen within ${timeoutMs} ms:\n${tail}`));
    }, timeoutMs);
    proc.stderr!.on('data', (d: Buffer) => (tail = (tail + d).slice(-20_000)));
    onJsonLogLines(proc.stderr!, (entry) => {
      if (typeof entry.level === 'number' && entry.level >= 50) served.errors.push(entry);
      if (entry.msg === 'listening' && !served.url) {
        clearTimeout(timer);
        served.url = entry.url as string;
        resolve(served);
      }
    });
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (!served.url) reject(new Error(`serve exited (${code ?? signal}) before listening:\n${tail}`));
    });
  });
}

/** Resident memory of a process in MiB, from /proc (Linux). */
export function rssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/** SIGTERM, then the exit (SIGKILL after `ms`). */
export async function stopServer(s: Served, ms = 40_000): Promise<{ code: number | null; signal: string | null }> {
  if (s.exit) return s.exit;
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => s.proc.once('exit', (code, signal) => resolve({ code, signal })));
  s.proc.kill('SIGTERM');
  const timer = setTimeout(() => s.proc.kill('SIGKILL'), ms);
  const r = await exited;
  clearTimeout(timer);
  return r;
}
