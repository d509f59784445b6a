/** The data folder's files are the owner's alone, and a bad --data fails at once with the reason. */
import { chmodSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DB_FILE, openDatabase } from '../../adapters/sqlite/db.ts';
import { AccountAdmin } from '../../adapters/sqlite/accounts.ts';
import { runCli } from '../cli/helpers/cli.ts';
import { loadPlans } from '../../adapters/config-node.ts';

const mode = (path: string) => statSync(path).mode & 0o777;

describe('SQLite file modes', () => {
  it('creates the database and its -wal and -shm files 0600 in a world-writable folder, whatever the umask', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'svc-mode-')), 'open');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    const old = process.umask(0);
    try {
      const db = openDatabase(dir);
      // A write makes sure the WAL and its index exist.
      new AccountAdmin(db, loadPlans()).createAccount({ plan: 'solo', mode: 'live', now: Date.now() });
      for (const f of [DB_FILE, `${DB_FILE}-wal`, `${DB_FILE}-shm`]) expect([f, mode(join(dir, f))]).toEqual([f, 0o600]);
      db.close();
    } finally {
      process.umask(old);
    }
  });

  it('narrows an existing database file to 0600', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-mode-'));
    writeFileSync(join(dir, DB_FILE), '');
    chmodSync(join(dir, DB_FILE), 0o666);
    openDatabase(dir).close();
    expect(mode(join(dir, DB_FILE))).toBe(0o600);
  });
});

describe('--data that cannot be a data folder', () => {
  it('fails at once, naming the folder and why, for keys and serve', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-mode-')), 'plain-file');
    writeFileSync(file, 'x');
    const cases: [string[], RegExp][] = [
      [['keys', 'list', '--data', '/proc/svc-nowhere'], /data folder \/proc\/svc-nowhere .*cannot be created: ENOENT/],
      [['keys', 'list', '--data', file], /is a file, not a folder/],
      [['keys', 'list', '--data', join(file, 'sub')], /cannot be created: .*plain-file is a file, not a folder/],
      [['serve', '--port', '0', '--data', '/proc/svc-nowhere'], /data folder \/proc\/svc-nowhere/],
    ];
    for (const [args, message] of cases) {
      const t0 = performance.now();
      const r = await runCli(args);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(message);
      // It used to loop forever under /proc; now it is an error as soon as the command starts.
      expect(performance.now() - t0).toBeLessThan(15_000);
    }
  }, 90_000);
});
