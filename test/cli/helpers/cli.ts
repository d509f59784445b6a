/** Runs `svc` the way a user does (bin/svc.mjs in a child process) and waits for `serve` to listen. */
import { spawn, type ChildProcess } from 'node:child_process';
import { onJsonLogLines } from '../../../scripts/lib/json-log-lines.ts';
import { BIN, ROOT, runCli } from '../../../scripts/lib/run-svc.ts';

export { ROOT, runCli, type CliResult } from '../../../scripts/lib/run-svc.ts';

/** The new key from `svc keys create`: stdout's last line. */
export async function createKey(dataDir: string, ...args: string[]): Promise<string> {
  const r = await runCli(['keys', 'create', '--data', dataDir, ...args]);
  if (r.code !== 0) throw new Error(`keys create failed (${r.code}): ${r.stderr}`);
  return r.stdout.trimEnd().split('\n').pop()!;
}

export interface Served {
  proc: ChildProcess;
  url: string;
  /** Parsed JSON log lines so far. */
  logs: Record<string, unknown>[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `svc serve --port 0` on a data folder (null: the store is in `args`, e.g. --store); resolves once it logs its address. */
export function startServe(dataDir: string | null, args: string[] = [], timeoutMs = 180_000): Promise<Served> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...(dataDir === null ? [] : ['--data', dataDir]), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Record<string, unknown>[] = [];
  let text = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`serve did not listen within ${timeoutMs} ms:\n${text}`));
    }, timeoutMs);
    proc.stderr!.on('data', (d: Buffer) => (text += d));
    onJsonLogLines(proc.stderr!, (entry) => {
      logs.push(entry);
      if (entry.msg === 'listening') {
        clearTimeout(timer);
        resolve({ proc, url: entry.url as string, logs, exited });
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code ?? signal}) before listening:\n${text}`));
    });
  });
}
