/** Conversation memory in SQLite (migration 2): ordered turns per key and id, the oldest pruned, upgrades keep usage. */
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AccountAdmin } from '../../adapters/sqlite/accounts.ts';
import { DB_FILE, openDatabase, schemaVersion, type Db } from '../../adapters/sqlite/db.ts';
import { MIGRATIONS } from '../../adapters/sqlite/migrations.ts';
import { SqliteStore } from '../../adapters/sqlite/store.ts';
import { loadPlans } from '../../adapters/config-node.ts';

const open: Db[] = [];
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});

function setup(dir = mkdtempSync(join(tmpdir(), 'svc-conv-'))) {
  const db = openDatabase(dir);
  open.push(db);
  const admin = new AccountAdmin(db, loadPlans());
  const a = admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
  const b = admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
  return { db, dir, store: new SqliteStore(db), a: a.key.id, b: b.key.id };
}

describe('conversation turns', () => {
  it('come back in order, per key and conversation, the last `limit` of them', () => {
    const { store, a, b } = setup();
    store.appendTurns(a, 'c1', [{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' }], 5, 100);
    store.appendTurns(a, 'c1', [{ role: 'user', content: 'three' }, { role: 'assistant', content: 'four' }], 6, 100);
    store.appendTurns(a, 'c2', [{ role: 'user', content: 'other' }], 7, 100);
    expect(store.conversationTurns(a, 'c1', 100).map((t) => t.content)).toEqual(['one', 'two', 'three', 'four']);
    expect(store.conversationTurns(a, 'c1', 3)).toEqual([
      { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three' },
      { role: 'assistant', content: 'four' },
    ]);
    expect(store.conversationTurns(b, 'c1', 100)).toEqual([]);
    expect(store.conversationTurns(a, 'nope', 100)).toEqual([]);
  });

  it('keep only the newest `keep` turns of a conversation', () => {
    const { store, db, a } = setup();
    for (let i = 0; i < 10; i++) store.appendTurns(a, 'c', [{ role: i % 2 ? 'assistant' : 'user', content: String(i) }], i, 4);
    expect(store.conversationTurns(a, 'c', 100).map((t) => t.content)).toEqual(['6', '7', '8', '9']);
    expect(db.prepare('SELECT COUNT(*) AS n FROM conversation_turns').get()).toEqual({ n: 4 });
  });

  it('survive reopening, and an older database gains the table without losing usage', () => {
    const { store, dir, db, a } = setup();
    store.appendTurns(a, 'c', [{ role: 'user', content: 'kept' }], 1, 10);
    db.close();
    const again = openDatabase(dir);
    open.push(again);
    expect(new SqliteStore(again).conversationTurns(a, 'c', 10)).toEqual([{ role: 'user', content: 'kept' }]);

    // A version-1 database (before conversations) with usage in it.
    const old = mkdtempSync(join(tmpdir(), 'svc-conv-'));
    const raw = new Database(join(old, DB_FILE));
    raw.exec(MIGRATIONS[0]);
    raw.pragma('user_version = 1');
    raw.exec("INSERT INTO accounts (id, plan, trial_ends_at, created_at, updated_at) VALUES (1, 'solo', 9, 1, 1); INSERT INTO api_keys (id, account_id, prefix, hash, mode, created_at) VALUES (1, 1, 'svc_live_abcdefgh', zeroblob(32), 'live', 1); INSERT INTO usage VALUES (1, 0, 'chat', 3, 4, 5);");
    raw.close();
    const upgraded = openDatabase(old);
    open.push(upgraded);
    expect(schemaVersion(upgraded)).toBe(MIGRATIONS.length);
    const s = new SqliteStore(upgraded);
    expect(s.requestsInPeriod(1, 0)).toBe(3);
    s.appendTurns(1, 'c', [{ role: 'user', content: 'hi' }], 1, 10);
    expect(s.conversationTurns(1, 'c', 10)).toHaveLength(1);
  });
});
