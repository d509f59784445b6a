/** `svc keys` and `svc plan` as a user runs them, against a temporary data folder. */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AccountAdmin } from '../../adapters/sqlite/accounts.ts';
import { openDatabase } from '../../adapters/sqlite/db.ts';
import { ManualClock } from '../../protocol/clock.ts';
import { startServer } from '../http/helpers/harness.ts';
import { createKey, runCli } from './helpers/cli.ts';
import { loadPlans } from '../../adapters/config-node.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
});

function listed(): Promise<Record<string, unknown>[]> {
  return runCli(['keys', 'list', '--all', '--json', '--data', dir]).then((r) => {
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout);
  });
}

describe('svc keys', () => {
  it('creates production and sandbox keys, printing each once as the last line of stdout', async () => {
    const r = await runCli(['keys', 'create', '--plan', 'solo', '--email', 'ann@example.com', '--data', dir]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[lines.length - 1]).toBe('');
    expect(lines[lines.length - 2]).toMatch(/^svc_live_[A-Za-z0-9]{32}$/);
    expect(r.stdout.trim()).toBe(lines[lines.length - 2]);
    expect(r.stderr).toContain('created production key svc_live_');
    expect(r.stderr).toContain('trial until');
    const key = lines[lines.length - 2];

    const test = await createKey(dir, '--plan', 'starter', '--test');
    expect(test).toMatch(/^svc_test_[A-Za-z0-9]{32}$/);

    // Stored as hashes only; listed by public prefix.
    const db = openDatabase(dir);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    for (const f of readdirSync(dir)) expect(readFileSync(join(dir, f)).includes(Buffer.from(key.slice(17)))).toBe(false);
    const keys = await listed();
    expect(keys.map((k) => k.prefix)).toEqual([key.slice(0, 17), test.slice(0, 17)]);
    expect(keys[0]).toMatchObject({ mode: 'live', plan: 'solo', email: 'ann@example.com', paid: false, requests_this_period: 0, requests_limit: 10000, revoked_at: null });
    expect(JSON.stringify(keys)).not.toContain(key.slice(17));
  });

  it('adds a key to an existing account, revokes by prefix, and lists revoked keys only with --all', async () => {
    const first = await createKey(dir, '--plan', 'professional');
    const second = await createKey(dir, '--account', first.slice(0, 17));
    const keys = await listed();
    const a = keys.find((k) => k.prefix === first.slice(0, 17))!;
    const b = keys.find((k) => k.prefix === second.slice(0, 17))!;
    expect(b.account).toBe(a.account);
    const r = await runCli(['keys', 'revoke', first.slice(0, 14), '--data', dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`revoked ${first.slice(0, 17)}`);
    const active = JSON.parse((await runCli(['keys', 'list', '--json', '--data', dir])).stdout) as { prefix: string }[];
    expect(active.map((k) => k.prefix)).not.toContain(first.slice(0, 17));
    expect(active.map((k) => k.prefix)).toContain(second.slice(0, 17));
    const again = await runCli(['keys', 'revoke', first.slice(0, 17), '--data', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already revoked');
  });

  it('rejects bad input with a message naming it, and changes nothing', async () => {
    const before = (await listed()).length;
    for (const [args, message] of [
      [['keys', 'create', '--plan', 'gold'], 'unknown plan "gold"'],
      [['keys', 'create'], 'give --plan <plan>'],
      [['keys', 'create', '--plan', 'solo', '--email', 'nope'], 'is not an e-mail address'],
      [['keys', 'create', '--plan', 'enterprise'], '--rpm N and --monthly N'],
      [['keys', 'create', '--plan', 'enterprise', '--rpm', '0', '--monthly', '5'], '--rpm must be an integer ≥ 1'],
      [['keys', 'revoke', 'svc_live_zzzz'], 'no key has the prefix'],
      [['keys', 'revoke', 'abc'], 'is not a key prefix'],
    ] as const) {
      const r = await runCli([...args, '--data', dir]);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stderr).toContain(message);
      expect(r.stdout).toBe('');
    }
    expect((await listed()).length).toBe(before);
  });
});

describe('svc plan', () => {
  it('sets plans, payment and Enterprise limits on the account of a key', async () => {
    const key = await createKey(dir, '--plan', 'solo');
    const prefix = key.slice(0, 17);
    let r = await runCli(['plan', 'set', prefix, 'starter', '--paid', '--data', dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('plan starter, paid');
    r = await runCli(['plan', 'set', prefix, 'enterprise', '--data', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('--rpm N and --monthly N');
    r = await runCli(['plan', 'set', prefix, 'enterprise', '--rpm', '7', '--monthly', '700', '--data', dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('7/min, 700/month');
    r = await runCli(['plan', 'set', prefix, 'scale', '--rpm', '7', '--data', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('fixed limits');

    const db = openDatabase(dir);
    try {
      const account = new AccountAdmin(db, loadPlans()).resolveKey(prefix).account;
      expect(account).toMatchObject({ plan: 'enterprise', paid: true, rpmLimit: 7, monthlyLimit: 700 });
    } finally {
      db.close();
    }
  });

  it('uses $SVC_DATA_DIR when --data is not given, and lists the plans', async () => {
    const other = mkdtempSync(join(tmpdir(), 'svc-cli-env-'));
    const r = await runCli(['keys', 'create', '--plan', 'scale'], { SVC_DATA_DIR: other });
    expect(r.code).toBe(0);
    expect(readdirSync(other)).toContain('svc.sqlite');
    const plans = await runCli(['plan', 'list']);
    expect(plans.stdout).toMatch(/solo {10}Solo: 20\/min, 10000\/month, \d+ at once/);
    expect(plans.stdout).toContain('7-day trial');
  });
});

describe('the CLI beside a running server', () => {
  it('creates keys the server accepts, and plan changes and revocations apply to the next request', async () => {
    const shared = mkdtempSync(join(tmpdir(), 'svc-cli-live-'));
    const h = await startServer({ dataDir: shared, clock: new ManualClock(Date.now()) });
    try {
      const key = await createKey(shared, '--plan', 'solo');
      const models = async () => {
        const res = await fetch(`${h.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
        return res.status === 200 ? ((await res.json()).data as unknown[]).length : res.status;
      };
      expect(await models()).toBe(3);
      expect((await runCli(['plan', 'set', key.slice(0, 17), 'professional', '--data', shared])).code).toBe(0);
      expect(await models()).toBe(6);
      expect((await runCli(['keys', 'revoke', key.slice(0, 17), '--data', shared])).code).toBe(0);
      expect(await models()).toBe(401);
    } finally {
      await h.close();
    }
  });
});

describe('svc serve', () => {
  it('refuses a missing model file or a bad port with a clear error, before loading anything', async () => {
    let r = await runCli(['serve', '--model', '/nonexistent/model.gguf', '--data', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('model file not found: /nonexistent/model.gguf');
    r = await runCli(['serve', '--port', '70000', '--data', dir]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('--port must be an integer');
  });
});
