/**
 * The service's one SQLite file, `<data dir>/svc.sqlite`, shared by `svc serve` and the `svc keys` /
 * `svc plan` commands (they may run while the server does).
 *
 * WAL lets readers and the single writer proceed together. synchronous=NORMAL: in WAL mode every
 * commit is written to the OS before it returns, so a counted request survives any crash of the process
 * (kill -9, OOM, a bug); only an OS crash or power loss can roll back the last few commits, never
 * corrupt the file. FULL would add an fsync per request, and that fsync sits between "counted" and
 * "answered": a crash during it leaves a count for a response no client received (measured: with FULL
 * the kill -9 test over-counted by one in 2 of 5 runs, with NORMAL in none). Counts drive quotas, not
 * invoices (pricing is flat), so a few seconds lost to a power cut cost a few free requests at most.
 */
import Database from 'better-sqlite3';
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { MIGRATIONS } from './migrations.ts';

export type Db = Database.Database;

export const DB_FILE = 'svc.sqlite';

/** `--data`, else $SVC_DATA_DIR, else ./data (relative to the working directory). */
export function resolveDataDir(flag?: string): string {
  return resolve(flag ?? process.env.SVC_DATA_DIR ?? 'data');
}

/** Keys' hashes and usage: readable by the owner only. SQLite gives the -wal and -shm files the database file's mode. */
const FILE_MODE = 0o600;

export function openDatabase(dataDir: string): Db {
  ensureDataDir(dataDir);
  const path = join(dataDir, DB_FILE);
  // Created (or narrowed) before SQLite opens it, so its mode does not depend on the umask or the folder.
  closeSync(openSync(path, 'a', FILE_MODE));
  chmodSync(path, FILE_MODE);
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    // The CLI and the server write the same file; wait for each other instead of failing.
    db.pragma('busy_timeout = 5000');
    migrate(db, path);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/**
 * The data folder, created one level at a time where missing. Node's recursive mkdir loops forever
 * under /proc (each level reports ENOENT); single mkdirs fail at once with the reason, and a path that
 * names a file is said to be one.
 */
export function ensureDataDir(dataDir: string): void {
  const fail = (why: string) => new Error(`data folder ${dataDir} (--data or $SVC_DATA_DIR) ${why}`);
  const missing: string[] = [];
  for (let dir = resolve(dataDir); ; dir = dirname(dir)) {
    let isDir: boolean | undefined;
    try {
      isDir = statSync(dir).isDirectory();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw fail(`cannot be checked: ${(e as Error).message}`);
    }
    if (isDir === false) throw fail(dir === resolve(dataDir) ? 'is a file, not a folder' : `cannot be created: ${dir} is a file, not a folder`);
    if (isDir) break;
    if (dirname(dir) === dir) throw fail('cannot be created: no part of the path exists');
    missing.unshift(dir);
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw fail(`cannot be created: ${(e as Error).message}`);
    }
  }
}

export function schemaVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

function migrate(db: Db, path: string): void {
  const apply = db.transaction(() => {
    // Read inside the (immediate) transaction: two processes starting together must not both migrate.
    const current = schemaVersion(db);
    if (current > MIGRATIONS.length) {
      throw new Error(`${path} has schema version ${current}, newer than this build of svc knows (${MIGRATIONS.length}); use a newer svc`);
    }
    for (let v = current; v < MIGRATIONS.length; v++) {
      db.exec(MIGRATIONS[v]);
      db.pragma(`user_version = ${v + 1}`);
    }
  });
  if (schemaVersion(db) !== MIGRATIONS.length) apply.immediate();
}
