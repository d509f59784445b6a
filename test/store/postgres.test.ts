/**
 * The store and the account admin on a real PostgreSQL (test/helpers/postgres-server.ts): the behaviours
 * the SQLite tests check (keys, usage per period and specialist, conversations, migrations), plus what a
 * store shared by replicas needs: a request counted once however often its write is retried, exact sums
 * under concurrent writers, concurrent migrations, and an outage that is 503 backend_unavailable (never
 * a raw error, never a hang) with service back once the server is. `svc keys` / `svc plan --store` too.
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin } from '../../adapters/admin.ts';
import { loadPlans } from '../../adapters/config-node.ts';
import { openStore, resolveStoreSpec } from '../../adapters/open-store.ts';
import { PostgresAdmin } from '../../adapters/postgres/accounts.ts';
import { isUnreachable } from '../../adapters/postgres/errors.ts';
import { migratePostgres, POSTGRES_MIGRATIONS, postgresSchemaVersion } from '../../adapters/postgres/migrations.ts';
import { openPostgres, type Postgres, type PostgresOptions } from '../../adapters/postgres/pool.ts';
import { PostgresStore } from '../../adapters/postgres/store.ts';
import { ApiError } from '../../protocol/errors.ts';
import { hashKey } from '../../protocol/keys.ts';
import type { Logger } from '../../protocol/logger.ts';
import type { Store } from '../../protocol/store.ts';
import { runCli } from '../cli/helpers/cli.ts';
import { freePort } from '../helpers/free-port.ts';
import { POSTGRES_MISSING, postgresAvailable, startPostgres, type PostgresServer } from '../helpers/postgres-server.ts';

if (!postgresAvailable) console.warn(`skipping the PostgreSQL tests: ${POSTGRES_MISSING}`);

const DAY = 86_400_000;
const plans = loadPlans();

/** Pools opened by a test, closed after the file. */
const pools: Postgres[] = [];
function pool(url: string, opts: PostgresOptions = {}): Postgres {
  const db = openPostgres(url, opts);
  pools.push(db);
  return db;
}

async function fresh(server: PostgresServer, opts: PostgresOptions = {}): Promise<{ url: string; db: Postgres; store: PostgresStore; admin: PostgresAdmin }> {
  const url = await server.createDatabase();
  const db = pool(url, opts);
  await migratePostgres(db);
  return { url, db, store: new PostgresStore(db), admin: new PostgresAdmin(db, plans, async () => {}) };
}

async function expectUnavailable(p: unknown): Promise<void> {
  const e = await Promise.resolve(p).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ApiError);
  expect(e).toMatchObject({ status: 503, code: 'backend_unavailable', retryAfterSeconds: 2, type: 'server_error' });
  expect((e as ApiError).message).toContain('database (PostgreSQL)');
}

/** Calls every Store method once. */
function everyStoreMethod(store: Store, keyId: number): Array<[string, () => unknown]> {
  return [
    ['findKey', () => store.findKey('svc_live_AAAAAAAA')],
    ['requestsInPeriod', () => store.requestsInPeriod(keyId, 0)],
    ['usageInPeriod', () => store.usageInPeriod(keyId, 0)],
    ['recordUsage', () => store.recordUsage({ requestId: `use_outage_${Math.random()}`, keyId, periodStart: 0, specialist: 'chat', promptTokens: 1, completionTokens: 1 })],
    ['conversationTurns', () => store.conversationTurns(keyId, 'c', 10)],
    ['appendTurns', () => store.appendTurns(keyId, 'c', [{ role: 'user', content: 'hi' }], 1, 10)],
  ];
}

function recordingLogger(): Logger & { lines: Array<{ level: string; fields: object; msg?: string }> } {
  const lines: Array<{ level: string; fields: object; msg?: string }> = [];
  const at = (level: string) => (fields: object, msg?: string) => void lines.push({ level, fields, msg });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close().catch(() => {})));
});

describe.skipIf(!postgresAvailable)('the store on PostgreSQL', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close().catch(() => {})));
    await server?.close();
  });

  describe('migrations', () => {
    it('create the schema and record each version once; running them again changes nothing and keeps data', async () => {
      const { db, admin } = await fresh(server);
      expect(await postgresSchemaVersion(db)).toBe(POSTGRES_MIGRATIONS.length);
      const { rows: tables } = await db.query<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1");
      expect(tables.map((r) => r.t)).toEqual([
        'accounts',
        'api_keys',
        'conversation_turns',
        'ft_checkpoints',
        'ft_files',
        'ft_job_events',
        'ft_jobs',
        'ft_models',
        'ft_usage',
        'schema_migrations',
        'usage',
        'usage_events',
      ]);
      await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
      expect(await migratePostgres(db)).toBe(POSTGRES_MIGRATIONS.length);
      expect(await migratePostgres(db)).toBe(POSTGRES_MIGRATIONS.length);
      const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((_, i) => i + 1));
      expect(await admin.listKeys({ includeRevoked: true, now: 1 })).toHaveLength(1);
    });

    it('run once when replicas start together (an advisory lock makes them take turns)', async () => {
      const url = await server.createDatabase();
      const replicas = Array.from({ length: 8 }, () => pool(url));
      expect(await Promise.all(replicas.map((r) => migratePostgres(r)))).toEqual(replicas.map(() => POSTGRES_MIGRATIONS.length));
      const { rows } = await replicas[0].query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((_, i) => i + 1));
    });

    it('upgrade a database at an older version, and refuse one from a newer build', async () => {
      const url = await server.createDatabase();
      const db = pool(url);
      expect(await postgresSchemaVersion(db)).toBe(0);
      expect(await migratePostgres(db, POSTGRES_MIGRATIONS.slice(0, 1))).toBe(1);
      expect(await postgresSchemaVersion(db)).toBe(1);
      await db.query("INSERT INTO accounts (id, plan, trial_ends_at, created_at, updated_at) VALUES (1, 'solo', 9, 1, 1)");
      await db.query("INSERT INTO api_keys (id, account_id, prefix, hash, mode, created_at) VALUES (1, 1, 'svc_live_abcdefgh', decode(repeat('00', 32), 'hex'), 'live', 1)");
      await db.query("INSERT INTO usage VALUES (1, 0, 'chat', 3, 4, 5)");
      expect(await migratePostgres(db)).toBe(POSTGRES_MIGRATIONS.length);
      const store = new PostgresStore(db);
      expect(await store.requestsInPeriod(1, 0)).toBe(3);
      await store.appendTurns(1, 'c', [{ role: 'user', content: 'hi' }], 1, 10);
      expect(await store.conversationTurns(1, 'c', 10)).toHaveLength(1);

      await db.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [POSTGRES_MIGRATIONS.length + 1]);
      await expect(migratePostgres(db)).rejects.toThrow(/has schema version \d+, newer than this build of svc knows/);
    });
  });

  describe('accounts and keys', () => {
    it('creates an account with a 7-day trial and a key findable by its public prefix, storing the hash only', async () => {
      const { db, store, admin } = await fresh(server);
      const c = await admin.createAccount({ plan: 'starter', email: 'a@b.c', mode: 'live', now: 1000 });
      expect(c.account).toMatchObject({ plan: 'starter', email: 'a@b.c', paid: false, trialEndsAt: 1000 + 7 * DAY, rpmLimit: null, monthlyLimit: null, createdAt: 1000 });
      expect(typeof c.account.id).toBe('number');
      expect(typeof c.key.id).toBe('number');
      const found = (await store.findKey(c.key.prefix))!;
      expect(Array.from(found.key.hash)).toEqual(Array.from(hashKey(c.secret)));
      expect(found.key).toMatchObject({ id: c.key.id, accountId: c.account.id, prefix: c.key.prefix, mode: 'live', createdAt: 1000, revokedAt: null });
      expect(found.account).toEqual(c.account);
      expect(await store.findKey('svc_live_zzzzzzzz')).toBeUndefined();
      const { rows } = await db.query('SELECT * FROM api_keys');
      const dump = JSON.stringify(rows);
      expect(dump).not.toContain(c.secret.slice(17));
    });

    it('requires per-account limits for Enterprise and refuses them elsewhere, with the SQLite messages', async () => {
      const { admin } = await fresh(server);
      await expect(admin.createAccount({ plan: 'enterprise', mode: 'live', now: 0 })).rejects.toThrow("the Enterprise plan's limits are set per account: give --rpm N and --monthly N");
      await expect(admin.createAccount({ plan: 'solo', mode: 'live', now: 0, rpmLimit: 5 })).rejects.toThrow('the Solo plan has fixed limits (20/min, 10000/month)');
      await expect(admin.createAccount({ plan: 'gold', mode: 'live', now: 0 })).rejects.toThrow('unknown plan "gold"; plans: solo, starter, professional, scale, enterprise');
      const e = await admin.createAccount({ plan: 'enterprise', mode: 'live', now: 0, rpmLimit: 7, monthlyLimit: 70 });
      expect(e.account).toMatchObject({ rpmLimit: 7, monthlyLimit: 70 });
      expect(await admin.listKeys({ includeRevoked: true, now: 0 })).toHaveLength(1);
    });

    it('changes plans, keeps Enterprise limits unless replaced, clears them on leaving', async () => {
      const { admin, store } = await fresh(server);
      const { account, key } = await admin.createAccount({ plan: 'solo', mode: 'live', now: 0 });
      await expect(admin.setPlan(account.id, { plan: 'enterprise' }, 1)).rejects.toThrow('--rpm N and --monthly N');
      expect(await admin.setPlan(account.id, { plan: 'enterprise', rpmLimit: 3, monthlyLimit: 30, paid: true }, 1)).toMatchObject({ plan: 'enterprise', rpmLimit: 3, monthlyLimit: 30, paid: true });
      expect(await admin.setPlan(account.id, { plan: 'enterprise', monthlyLimit: 40 }, 2)).toMatchObject({ rpmLimit: 3, monthlyLimit: 40, paid: true });
      expect((await store.findKey(key.prefix))!.account).toMatchObject({ plan: 'enterprise', rpmLimit: 3, monthlyLimit: 40, paid: true });
      expect(await admin.setPlan(account.id, { plan: 'scale' }, 3)).toMatchObject({ plan: 'scale', rpmLimit: null, monthlyLimit: null, paid: true });
      expect(await admin.account(account.id)).toMatchObject({ plan: 'scale', paid: true });
      await expect(admin.account(999)).rejects.toThrow('no account 999');
      await expect(admin.setPlan(999, { plan: 'solo' }, 3)).rejects.toThrow('no account 999');
      await expect(admin.addKey(999, 'live', 3)).rejects.toThrow('no account 999');
    });

    it('resolves keys by whole key or unique prefix, and revokes once', async () => {
      const { admin } = await fresh(server);
      const a = await admin.createAccount({ plan: 'solo', mode: 'live', now: 0 });
      const b = await admin.addKey(a.account.id, 'test', 0);
      expect(b.account.id).toBe(a.account.id);
      expect(b.secret).toMatch(/^svc_test_/);
      expect((await admin.resolveKey(a.secret)).key.id).toBe(a.key.id);
      expect((await admin.resolveKey(a.key.prefix)).key.id).toBe(a.key.id);
      expect((await admin.resolveKey(b.key.prefix.slice(0, 13))).key.id).toBe(b.key.id);
      await expect(admin.resolveKey(a.secret.replace(/.$/, a.secret.endsWith('A') ? 'B' : 'A'))).rejects.toThrow('no such key');
      await expect(admin.resolveKey('svc_live_')).rejects.toThrow('not a key prefix');
      await expect(admin.resolveKey('svc_live_%%%%')).rejects.toThrow('not a key prefix');
      await admin.revokeKey(a.key.id, 5);
      await expect(admin.revokeKey(a.key.id, 6)).rejects.toThrow('the key is already revoked');
      expect((await admin.listKeys({ includeRevoked: false, now: 0 })).map((l) => l.key.id)).toEqual([b.key.id]);
      expect((await admin.listKeys({ includeRevoked: true, now: 0 })).find((l) => l.key.id === a.key.id)!.key.revokedAt).toBe(5);
    });

    it('reports an ambiguous prefix instead of picking one', async () => {
      const { db, admin } = await fresh(server);
      const { account } = await admin.createAccount({ plan: 'solo', mode: 'live', now: 0 });
      // Random prefixes rarely share four characters; write two that do.
      for (const [prefix, secret] of [
        ['svc_live_AAAA1111', 'one'],
        ['svc_live_AAAA2222', 'two'],
      ]) {
        await db.query("INSERT INTO api_keys (account_id, prefix, hash, mode, created_at) VALUES ($1, $2, $3, 'live', 0)", [account.id, prefix, Buffer.from(hashKey(secret))]);
      }
      await expect(admin.resolveKey('svc_live_AAAA')).rejects.toThrow('the prefix svc_live_AAAA matches 2 keys (svc_live_AAAA1111, svc_live_AAAA2222); give more characters');
      expect((await admin.resolveKey('svc_live_AAAA2')).key.prefix).toBe('svc_live_AAAA2222');
      await expect(admin.resolveKey('svc_test_AAAA')).rejects.toThrow('no key has the prefix svc_test_AAAA');
    });
  });

  describe('usage', () => {
    it('is counted per key, period and specialist; totals are exactly the sum of the rows', async () => {
      const { store, admin } = await fresh(server);
      const a = await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
      const b = await admin.addKey(a.account.id, 'test', 1);
      const rec = (keyId: number, periodStart: number, specialist: string) => store.recordUsage({ keyId, periodStart, specialist, promptTokens: 10, completionTokens: 5 });
      await rec(a.key.id, 100, 'chat');
      await rec(a.key.id, 100, 'chat');
      await rec(a.key.id, 100, 'summarise');
      await rec(a.key.id, 200, 'chat');
      await rec(b.key.id, 100, 'chat');
      expect(await store.requestsInPeriod(a.key.id, 100)).toBe(3);
      expect(await store.usageInPeriod(a.key.id, 100)).toEqual([
        { specialist: 'chat', requests: 2, promptTokens: 20, completionTokens: 10 },
        { specialist: 'summarise', requests: 1, promptTokens: 10, completionTokens: 5 },
      ]);
      expect(await store.requestsInPeriod(a.key.id, 200)).toBe(1);
      expect(await store.requestsInPeriod(b.key.id, 100)).toBe(1);
      expect(await store.requestsInPeriod(b.key.id, 200)).toBe(0);
      expect(await store.usageInPeriod(b.key.id, 200)).toEqual([]);
    });

    it('counts a request once however often its write is retried', async () => {
      const { url, db, store, admin } = await fresh(server);
      const { key } = await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
      const entry = { requestId: 'use_retried', keyId: key.id, periodStart: 0, specialist: 'chat', promptTokens: 7, completionTokens: 9 };
      await store.recordUsage(entry);
      await store.recordUsage(entry);
      // Retried from other replicas at once, too.
      const others = Array.from({ length: 4 }, () => new PostgresStore(pool(url)));
      await Promise.all([...others, store].flatMap((s) => [s.recordUsage(entry), s.recordUsage(entry)]));
      await store.recordUsage({ ...entry, requestId: 'use_other' });
      expect(await store.usageInPeriod(key.id, 0)).toEqual([{ specialist: 'chat', requests: 2, promptTokens: 14, completionTokens: 18 }]);
      const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM usage_events');
      expect(Number(rows[0].n)).toBe(2);
    });

    it('sums exactly when many clients count at once', async () => {
      const { url, store, admin } = await fresh(server);
      const { key, account } = await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
      const other = await admin.addKey(account.id, 'live', 1);
      const period = Date.UTC(2026, 0, 1);
      const clients = Array.from({ length: 8 }, () => new PostgresStore(pool(url, { maxConnections: 5 })));
      const specialists = ['chat', 'summarise', 'classify'];
      const perClient = 60;
      await Promise.all(
        clients.flatMap((s, c) =>
          Array.from({ length: perClient }, (_, i) =>
            s.recordUsage({ requestId: `use_${c}_${i}`, keyId: i % 10 === 0 ? other.key.id : key.id, periodStart: period, specialist: specialists[i % 3], promptTokens: i, completionTokens: 1 }),
          ),
        ),
      );
      const total = clients.length * perClient;
      const onOther = clients.length * (perClient / 10);
      const rows = await store.usageInPeriod(key.id, period);
      expect(await store.requestsInPeriod(key.id, period)).toBe(total - onOther);
      expect(await store.requestsInPeriod(other.key.id, period)).toBe(onOther);
      expect(rows.reduce((n, r) => n + r.requests, 0)).toBe(total - onOther);
      const expectedPrompt = clients.length * Array.from({ length: perClient }, (_, i) => (i % 10 === 0 ? 0 : i)).reduce((a, b) => a + b, 0);
      expect(rows.reduce((n, r) => n + r.promptTokens, 0)).toBe(expectedPrompt);
      expect(rows.reduce((n, r) => n + r.completionTokens, 0)).toBe(total - onOther);
      expect(rows.map((r) => r.specialist)).toEqual(['chat', 'classify', 'summarise']);
    });

    it('shows this period’s requests in the key listing', async () => {
      const { store, admin } = await fresh(server);
      const now = Date.UTC(2026, 4, 10);
      const { key } = await admin.createAccount({ plan: 'solo', mode: 'live', now });
      const { billingPeriodAt } = await import('../../protocol/billing-period.ts');
      for (let i = 0; i < 3; i++) await store.recordUsage({ requestId: `use_l${i}`, keyId: key.id, periodStart: billingPeriodAt(now).start, specialist: 'chat', promptTokens: 1, completionTokens: 1 });
      expect((await admin.listKeys({ includeRevoked: false, now }))[0].requestsThisPeriod).toBe(3);
      expect((await admin.listKeys({ includeRevoked: false, now: now + 40 * DAY }))[0].requestsThisPeriod).toBe(0);
    });

    it('rejects usage for a key that does not exist as the error it is (not an outage)', async () => {
      const { store } = await fresh(server);
      const e = await Promise.resolve(store.recordUsage({ requestId: 'use_x', keyId: 99, periodStart: 0, specialist: 'chat', promptTokens: 1, completionTokens: 1 })).catch((err: unknown) => err);
      expect(e).not.toBeInstanceOf(ApiError);
      expect((e as Error).message).toMatch(/foreign key/);
    });
  });

  describe('conversation turns', () => {
    it('come back in order, per key and conversation, the last `limit` of them', async () => {
      const { store, admin } = await fresh(server);
      const a = (await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 })).key.id;
      const b = (await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 })).key.id;
      await store.appendTurns(a, 'c1', [{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' }], 5, 100);
      await store.appendTurns(a, 'c1', [{ role: 'user', content: 'three' }, { role: 'assistant', content: 'four' }], 6, 100);
      await store.appendTurns(a, 'c2', [{ role: 'user', content: 'other' }], 7, 100);
      expect((await store.conversationTurns(a, 'c1', 100)).map((t) => t.content)).toEqual(['one', 'two', 'three', 'four']);
      expect(await store.conversationTurns(a, 'c1', 3)).toEqual([
        { role: 'assistant', content: 'two' },
        { role: 'user', content: 'three' },
        { role: 'assistant', content: 'four' },
      ]);
      expect(await store.conversationTurns(b, 'c1', 100)).toEqual([]);
      expect(await store.conversationTurns(a, 'nope', 100)).toEqual([]);
    });

    it('keep only the newest `keep` turns of a conversation', async () => {
      const { db, store, admin } = await fresh(server);
      const a = (await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 })).key.id;
      for (let i = 0; i < 10; i++) await store.appendTurns(a, 'c', [{ role: i % 2 ? 'assistant' : 'user', content: String(i) }], i, 4);
      expect((await store.conversationTurns(a, 'c', 100)).map((t) => t.content)).toEqual(['6', '7', '8', '9']);
      const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM conversation_turns');
      expect(Number(rows[0].n)).toBe(4);
    });

    it('take turns when replicas append to one conversation at once: every exchange whole and in one piece', async () => {
      const { url, store, admin } = await fresh(server);
      const a = (await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 })).key.id;
      const replicas = Array.from({ length: 4 }, () => new PostgresStore(pool(url)));
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          replicas[i % replicas.length].appendTurns(a, 'shared', [{ role: 'user', content: `q${i}` }, { role: 'assistant', content: `a${i}` }], i, 1000),
        ),
      );
      const turns = await store.conversationTurns(a, 'shared', 1000);
      expect(turns).toHaveLength(80);
      for (let t = 0; t < turns.length; t += 2) {
        expect(turns[t].role).toBe('user');
        expect(turns[t + 1]).toEqual({ role: 'assistant', content: `a${turns[t].content.slice(1)}` });
      }
      expect(new Set(turns.map((t) => t.content)).size).toBe(80);
    });
  });

  describe('svc keys and svc plan with --store', () => {
    it('create a key in PostgreSQL that `svc keys list --store` shows; plan set and revoke work there too', async () => {
      const url = await server.createDatabase();
      const r = await runCli(['keys', 'create', '--plan', 'solo', '--email', 'pg@example.com', '--store', url]);
      expect(r.stderr).toContain('created production key svc_live_');
      expect(r.code).toBe(0);
      const key = r.stdout.trimEnd().split('\n').pop()!;
      expect(key).toMatch(/^svc_live_[A-Za-z0-9]{32}$/);

      const list = await runCli(['keys', 'list', '--json', '--store', url]);
      expect(list.code).toBe(0);
      const items = JSON.parse(list.stdout) as Record<string, unknown>[];
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({ prefix: key.slice(0, 17), mode: 'live', plan: 'solo', email: 'pg@example.com', paid: false, requests_this_period: 0, requests_limit: 10000, revoked_at: null });
      expect(list.stdout).not.toContain(key.slice(17));

      // $SVC_STORE instead of the flag; the table form.
      const table = await runCli(['keys', 'list'], { SVC_STORE: url });
      expect(table.code).toBe(0);
      expect(table.stdout).toContain(key.slice(0, 17));

      const plan = await runCli(['plan', 'set', key.slice(0, 14), 'enterprise', '--rpm', '3', '--monthly', '30', '--paid', '--store', url]);
      expect(plan.stderr).toBe('');
      expect(plan.stdout).toMatch(/^account \d+: plan enterprise, paid, 3\/min, 30\/month\n$/);
      const noLimits = await runCli(['plan', 'set', key.slice(0, 14), 'enterprise', '--store', url]);
      expect(noLimits.code).toBe(0);
      expect(noLimits.stdout).toContain('3/min, 30/month');

      const revoke = await runCli(['keys', 'revoke', key.slice(0, 17), '--store', url]);
      expect(revoke.code).toBe(0);
      const again = await runCli(['keys', 'revoke', key.slice(0, 17), '--store', url]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('already revoked');

      // What the CLI wrote is what the server's store reads.
      const opened = await openStore({ url }, plans);
      try {
        const found = await opened.store.findKey(key.slice(0, 17));
        expect(found?.account).toMatchObject({ plan: 'enterprise', rpmLimit: 3, monthlyLimit: 30, paid: true });
        expect(found?.key.revokedAt).not.toBeNull();
      } finally {
        await opened.close();
      }
    });

    it('say what is wrong with the store they were given, and never print its password', async () => {
      const bad = await runCli(['keys', 'list', '--store', 'mysql://u:hunter2@h/db']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('--store (or $SVC_STORE) takes a PostgreSQL URL');
      expect(bad.stderr).not.toContain('hunter2');
      const both = await runCli(['keys', 'list', '--store', server.url, '--data', '/tmp/nowhere']);
      expect(both.code).toBe(1);
      expect(both.stderr).toContain('--data and --store name two different stores');
      const port = await freePort();
      const down = await runCli(['keys', 'list', '--store', `postgres://postgres:hunter2@127.0.0.1:${port}/db`]);
      expect(down.code).toBe(1);
      expect(down.stderr).toContain(`cannot reach PostgreSQL at 127.0.0.1:${port}/db`);
      expect(down.stderr).not.toContain('hunter2');
    });

    it('resolve the store from flags and environment in one order', () => {
      expect(resolveStoreSpec({ store: 'postgres://h/db' }, {})).toEqual({ url: 'postgres://h/db' });
      expect(resolveStoreSpec({}, { SVC_STORE: 'postgresql://h/db' })).toEqual({ url: 'postgresql://h/db' });
      expect(resolveStoreSpec({ data: '/tmp/d' }, { SVC_STORE: 'postgres://h/db' })).toEqual({ dataDir: '/tmp/d' });
      expect(resolveStoreSpec({}, { SVC_STORE: ' ' }).dataDir).toBeDefined();
    });
  });
});

describe.skipIf(!postgresAvailable)('PostgreSQL outages', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.start().catch(() => {});
    await server?.close();
  });

  for (const how of ['stop', 'kill'] as const) {
    it(`a server that ${how === 'stop' ? 'shuts down' : 'crashes'} gives 503 backend_unavailable on every method, and the same store works once it is back`, async () => {
      const url = (await server.createDatabase()).replace('postgres://postgres@', 'postgres://postgres:s3cret-pw@');
      const logger = recordingLogger();
      const opened = await openStore({ url }, plans, { logger });
      // A failure while the server is down must not leave it down for the tests after this one.
      let down = false;
      try {
        const { store, admin } = opened;
        const { key } = await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
        await store.recordUsage({ requestId: 'use_before', keyId: key.id, periodStart: 0, specialist: 'chat', promptTokens: 1, completionTokens: 1 });
        // Pooled connections are open when the server goes.
        await Promise.all(Array.from({ length: 5 }, () => store.requestsInPeriod(key.id, 0)));

        // A write in flight when the server goes (waiting for a lock another connection holds).
        // Waits on what the server says, not on timers: on a loaded machine 100 ms was not always enough
        // for the lock to be taken, and the write then went through before the outage.
        const locker = pool(url);
        let release!: () => void;
        let locked!: () => void;
        const lockHeld = new Promise<void>((r) => (locked = r));
        const holding = locker
          .transaction(async (q) => {
            await q.query('LOCK TABLE usage IN ACCESS EXCLUSIVE MODE');
            locked();
            await new Promise<void>((r) => (release = r));
          })
          .catch(() => {});
        await lockHeld;
        const inFlightUse = { requestId: 'use_in_flight', keyId: key.id, periodStart: 0, specialist: 'chat', promptTokens: 1, completionTokens: 1 };
        // Checked below, once the server is down.
        const inFlight = Promise.resolve(store.recordUsage(inFlightUse)).then(
          () => 'stored' as const,
          (err: unknown) => err,
        );
        const watcher = pool(url);
        for (let i = 0; i < 400; i++) {
          const { rows } = await watcher.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'");
          if (Number(rows[0].n) > 0) break;
          await new Promise((r) => setTimeout(r, 25));
        }
        await watcher.close();

        down = true;
        await server[how]();
        // A fast shutdown ends every backend at once: the lock holder may go first and the waiting write
        // commit before its own backend ends (seen on a loaded CI). Either it is stored and says so, or it
        // gets 503, and its retry after the outage stores it exactly once (usage is keyed by request id).
        const inFlightOutcome = await inFlight;
        if (inFlightOutcome !== 'stored') await expectUnavailable(Promise.reject(inFlightOutcome));
        release();
        await holding;
        const started = Date.now();
        for (const [name, call] of everyStoreMethod(store, key.id)) {
          await expectUnavailable(call()).catch((e: Error) => {
            throw new Error(`${name}: ${e.message}`);
          });
        }
        await expectUnavailable(admin.listKeys({ includeRevoked: true, now: 1 }));
        await expectUnavailable(admin.createAccount({ plan: 'solo', mode: 'live', now: 1 }));
        // Refused connections fail at once: nothing waits for a timeout.
        expect(Date.now() - started).toBeLessThan(5000);

        await server.start();
        down = false;
        await store.recordUsage({ requestId: 'use_after', keyId: key.id, periodStart: 0, specialist: 'chat', promptTokens: 1, completionTokens: 1 });
        await store.recordUsage(inFlightUse); // the client's retry: a no-op if the write was stored
        expect(await store.requestsInPeriod(key.id, 0)).toBe(3);
        expect((await store.findKey(key.prefix))?.key.id).toBe(key.id);
        expect(await admin.listKeys({ includeRevoked: true, now: 1 })).toHaveLength(1);

        // One warning per outage and one line when it is over; no password, key or prompt in them.
        const warnings = logger.lines.filter((l) => l.level === 'warn');
        expect(warnings).toHaveLength(1);
        expect(warnings[0].msg).toContain('PostgreSQL unreachable');
        expect(logger.lines.filter((l) => l.msg === 'PostgreSQL reachable again')).toHaveLength(1);
        const logged = JSON.stringify(logger.lines);
        expect(logged).not.toContain('s3cret-pw');
        expect(logged).not.toContain(key.prefix);
        expect(logged).toContain(`127.0.0.1:${server.port}/`);
      } finally {
        if (down) await server.start().catch(() => {});
        await opened.close();
      }
    });
  }

  it('a statement stuck behind a lock ends at the statement timeout with 503, and the pool goes on', async () => {
    const url = await server.createDatabase();
    const db = pool(url, { statementTimeoutMs: 300 });
    await migratePostgres(db);
    const store = new PostgresStore(db);
    const admin = new PostgresAdmin(db, plans, async () => {});
    const { key } = await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
    const locker = pool(url);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const holding = locker.transaction(async (q) => {
      await q.query('LOCK TABLE usage IN ACCESS EXCLUSIVE MODE');
      await held;
    });
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await expectUnavailable(store.recordUsage({ requestId: 'use_locked', keyId: key.id, periodStart: 0, specialist: 'chat', promptTokens: 1, completionTokens: 1 }));
    expect(Date.now() - started).toBeLessThan(3000);
    release();
    await holding;
    await store.recordUsage({ requestId: 'use_locked', keyId: key.id, periodStart: 0, specialist: 'chat', promptTokens: 1, completionTokens: 1 });
    expect(await store.requestsInPeriod(key.id, 0)).toBe(1);
  });

  it('a server that accepts connections but never answers gives 503 within the connect timeout', async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((s) => void sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    try {
      const db = pool(`postgres://postgres@127.0.0.1:${port}/db`, { connectTimeoutMs: 500 });
      const store = new PostgresStore(db);
      const started = Date.now();
      await expectUnavailable(store.findKey('svc_live_AAAAAAAA'));
      await expectUnavailable(store.appendTurns(1, 'c', [{ role: 'user', content: 'x' }], 1, 10));
      expect(Date.now() - started).toBeLessThan(3000);
      await expect(openStore({ url: `postgres://postgres@127.0.0.1:${port}/db` }, plans, { connectTimeoutMs: 300 })).rejects.toThrow(`cannot reach PostgreSQL at 127.0.0.1:${port}/db`);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('tells an outage from other errors', () => {
    const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
    expect(isUnreachable(coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'))).toBe(true);
    expect(isUnreachable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isUnreachable(new Error('Query read timeout'))).toBe(true);
    expect(isUnreachable(coded('terminating connection due to administrator command', '57P01'))).toBe(true);
    expect(isUnreachable(coded('the database system is starting up', '57P03'))).toBe(true);
    expect(isUnreachable(coded('canceling statement due to statement timeout', '57014'))).toBe(true);
    expect(isUnreachable(coded('connection failure', '08006'))).toBe(true);
    expect(isUnreachable(new AggregateError([coded('a', 'ECONNREFUSED'), coded('b', 'ECONNREFUSED')]))).toBe(true);
    expect(isUnreachable(coded('insert or update on table "usage" violates foreign key constraint', '23503'))).toBe(false);
    expect(isUnreachable(coded('password authentication failed for user "x"', '28P01'))).toBe(false);
    expect(isUnreachable(new Error('boom'))).toBe(false);
    expect(isUnreachable('ECONNREFUSED')).toBe(false);
  });
});

describe('openStore without a URL', () => {
  it('is the SQLite store in the data folder, with the same async admin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-open-'));
    const opened = await openStore({ dataDir: dir }, plans);
    try {
      expect(opened.kind).toBe('sqlite');
      const admin: Admin = opened.admin;
      const c = await admin.createAccount({ plan: 'solo', mode: 'live', now: 1 });
      expect((await opened.store.findKey(c.key.prefix))?.key.id).toBe(c.key.id);
      await expect(admin.createAccount({ plan: 'gold', mode: 'live', now: 1 })).rejects.toThrow('unknown plan "gold"');
      await admin.revokeKey(c.key.id, 2);
      await expect(admin.revokeKey(c.key.id, 3)).rejects.toThrow('the key is already revoked');
      expect((await admin.resolveKey(c.key.prefix)).key.revokedAt).toBe(2);
      expect(opened.sqlite?.db.open).toBe(true);
    } finally {
      await opened.close();
      await opened.close();
    }
    expect(opened.sqlite?.db.open).toBe(false);
  });
});
