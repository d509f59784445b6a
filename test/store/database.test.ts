import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AccountAdmin } from '../../adapters/sqlite/accounts.ts';
import { DB_FILE, openDatabase, schemaVersion, type Db } from '../../adapters/sqlite/db.ts';
import { MIGRATIONS } from '../../adapters/sqlite/migrations.ts';
import { SqliteStore } from '../../adapters/sqlite/store.ts';
import { loadPlans } from '../../adapters/config-node.ts';

const open: Db[] = [];
function fresh(dir = mkdtempSync(join(tmpdir(), 'svc-db-'))): { db: Db; dir: string } {
  const db = openDatabase(dir);
  open.push(db);
  return { db, dir };
}
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});

describe('the SQLite database', () => {
  it('is created in the data folder with WAL, synchronous=NORMAL and foreign keys', () => {
    const { db, dir } = fresh(join(mkdtempSync(join(tmpdir(), 'svc-db-')), 'nested', 'data'));
    expect(readdirSync(dir)).toContain(DB_FILE);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(1);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(schemaVersion(db)).toBe(MIGRATIONS.length);
  });

  it('migrates once: reopening keeps data and version', () => {
    const { db, dir } = fresh();
    const admin = new AccountAdmin(db, loadPlans());
    admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
    db.close();
    const again = openDatabase(dir);
    open.push(again);
    expect(schemaVersion(again)).toBe(MIGRATIONS.length);
    expect(new AccountAdmin(again, loadPlans()).listKeys({ includeRevoked: true, now: 1 })).toHaveLength(1);
  });

  it('refuses a database from a newer build instead of guessing', () => {
    const { db, dir } = fresh();
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    expect(() => openDatabase(dir)).toThrow(/schema version \d+, newer than this build/);
  });

  it('upgrades a database from before the first migration', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-db-'));
    new Database(join(dir, DB_FILE)).close();
    const { db } = fresh(dir);
    expect(schemaVersion(db)).toBe(MIGRATIONS.length);
  });

  it('stores hashes only: the key text appears nowhere in the files', () => {
    const { db, dir } = fresh();
    const { secret } = new AccountAdmin(db, loadPlans()).createAccount({ plan: 'solo', mode: 'live', now: 1, email: 'x@y.z' });
    db.pragma('wal_checkpoint(TRUNCATE)');
    for (const f of readdirSync(dir)) {
      const bytes = readFileSync(join(dir, f));
      expect(bytes.includes(Buffer.from(secret)), f).toBe(false);
      expect(bytes.includes(Buffer.from(secret.slice(17))), f).toBe(false);
    }
  });

  it('counts usage per key, period and specialist; totals are exactly the sum of the rows', () => {
    const { db } = fresh();
    const admin = new AccountAdmin(db, loadPlans());
    const a = admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
    const b = admin.addKey(a.account.id, 'test', 1);
    const store = new SqliteStore(db);
    const rec = (keyId: number, periodStart: number, specialist: string) => store.recordUsage({ keyId, periodStart, specialist, promptTokens: 10, completionTokens: 5 });
    rec(a.key.id, 100, 'chat');
    rec(a.key.id, 100, 'chat');
    rec(a.key.id, 100, 'summarise');
    rec(a.key.id, 200, 'chat');
    rec(b.key.id, 100, 'chat');
    expect(store.requestsInPeriod(a.key.id, 100)).toBe(3);
    expect(store.usageInPeriod(a.key.id, 100)).toEqual([
      { specialist: 'chat', requests: 2, promptTokens: 20, completionTokens: 10 },
      { specialist: 'summarise', requests: 1, promptTokens: 10, completionTokens: 5 },
    ]);
    expect(store.requestsInPeriod(a.key.id, 200)).toBe(1);
    expect(store.requestsInPeriod(b.key.id, 100)).toBe(1);
    expect(store.requestsInPeriod(b.key.id, 200)).toBe(0);
  });

  it('rejects usage for a key that does not exist (foreign key)', () => {
    const { db } = fresh();
    expect(() => new SqliteStore(db).recordUsage({ keyId: 99, periodStart: 0, specialist: 'chat', promptTokens: 1, completionTokens: 1 })).toThrow(/FOREIGN KEY/);
  });
});
