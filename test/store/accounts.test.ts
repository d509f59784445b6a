import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccountAdmin } from '../../adapters/sqlite/accounts.ts';
import { openDatabase, type Db } from '../../adapters/sqlite/db.ts';
import { SqliteStore } from '../../adapters/sqlite/store.ts';
import { hashKey } from '../../protocol/keys.ts';
import { loadPlans } from '../../adapters/config-node.ts';

const DAY = 86_400_000;
let db: Db;
let admin: AccountAdmin;
beforeEach(() => {
  db = openDatabase(mkdtempSync(join(tmpdir(), 'svc-acc-')));
  admin = new AccountAdmin(db, loadPlans());
});
afterEach(() => db.close());

describe('accounts and keys', () => {
  it('creates an account with a 7-day trial and a key findable by its public prefix', () => {
    const c = admin.createAccount({ plan: 'starter', email: 'a@b.c', mode: 'live', now: 1000 });
    expect(c.account).toMatchObject({ plan: 'starter', email: 'a@b.c', paid: false, trialEndsAt: 1000 + 7 * DAY, rpmLimit: null, monthlyLimit: null });
    const found = new SqliteStore(db).findKey(c.key.prefix)!;
    expect(Array.from(found.key.hash)).toEqual(Array.from(hashKey(c.secret)));
    expect(found.key.mode).toBe('live');
  });

  it('requires per-account limits for Enterprise and refuses them elsewhere', () => {
    expect(() => admin.createAccount({ plan: 'enterprise', mode: 'live', now: 0 })).toThrow('--rpm N and --monthly N');
    expect(() => admin.createAccount({ plan: 'solo', mode: 'live', now: 0, rpmLimit: 5 })).toThrow('fixed limits');
    expect(() => admin.createAccount({ plan: 'gold', mode: 'live', now: 0 })).toThrow('unknown plan "gold"; plans: solo, starter, professional, scale, enterprise');
    const e = admin.createAccount({ plan: 'enterprise', mode: 'live', now: 0, rpmLimit: 7, monthlyLimit: 70 });
    expect(e.account).toMatchObject({ rpmLimit: 7, monthlyLimit: 70 });
  });

  it('changes plans, keeps Enterprise limits unless replaced, clears them on leaving', () => {
    const { account } = admin.createAccount({ plan: 'solo', mode: 'live', now: 0 });
    expect(() => admin.setPlan(account.id, { plan: 'enterprise' }, 1)).toThrow('--rpm N and --monthly N');
    expect(admin.setPlan(account.id, { plan: 'enterprise', rpmLimit: 3, monthlyLimit: 30, paid: true }, 1)).toMatchObject({ plan: 'enterprise', rpmLimit: 3, monthlyLimit: 30, paid: true });
    expect(admin.setPlan(account.id, { plan: 'enterprise', monthlyLimit: 40 }, 2)).toMatchObject({ rpmLimit: 3, monthlyLimit: 40, paid: true });
    expect(admin.setPlan(account.id, { plan: 'scale' }, 3)).toMatchObject({ plan: 'scale', rpmLimit: null, monthlyLimit: null, paid: true });
  });

  it('resolves keys by whole key or unique prefix, and revokes once', () => {
    const a = admin.createAccount({ plan: 'solo', mode: 'live', now: 0 });
    const b = admin.addKey(a.account.id, 'test', 0);
    expect(b.account.id).toBe(a.account.id);
    expect(admin.resolveKey(a.secret).key.id).toBe(a.key.id);
    expect(admin.resolveKey(a.key.prefix).key.id).toBe(a.key.id);
    expect(admin.resolveKey(b.key.prefix.slice(0, 13)).key.id).toBe(b.key.id);
    expect(() => admin.resolveKey(a.secret.replace(/.$/, a.secret.endsWith('A') ? 'B' : 'A'))).toThrow('no such key');
    expect(() => admin.resolveKey('svc_live_')).toThrow('not a key prefix');
    expect(() => admin.resolveKey('svc_live_%%%%')).toThrow('not a key prefix');
    admin.revokeKey(a.key.id, 5);
    expect(() => admin.revokeKey(a.key.id, 6)).toThrow('already revoked');
    expect(admin.listKeys({ includeRevoked: false, now: 0 }).map((l) => l.key.id)).toEqual([b.key.id]);
    expect(admin.listKeys({ includeRevoked: true, now: 0 }).find((l) => l.key.id === a.key.id)!.key.revokedAt).toBe(5);
  });

  it('reports an ambiguous prefix instead of picking one', () => {
    const { account } = admin.createAccount({ plan: 'solo', mode: 'live', now: 0 });
    // Random prefixes rarely share four characters; write two that do.
    const insert = db.prepare("INSERT INTO api_keys (account_id, prefix, hash, mode, created_at) VALUES (?, ?, ?, 'live', 0)");
    insert.run(account.id, 'svc_live_AAAA1111', hashKey('one'));
    insert.run(account.id, 'svc_live_AAAA2222', hashKey('two'));
    expect(() => admin.resolveKey('svc_live_AAAA')).toThrow('the prefix svc_live_AAAA matches 2 keys (svc_live_AAAA1111, svc_live_AAAA2222); give more characters');
    expect(admin.resolveKey('svc_live_AAAA2').key.prefix).toBe('svc_live_AAAA2222');
    expect(() => admin.resolveKey('svc_test_AAAA')).toThrow('no key has the prefix svc_test_AAAA');
  });
});
