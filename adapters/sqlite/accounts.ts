/**
 * What a dashboard would do, for the CLI: create accounts and keys, list and revoke keys, change plans.
 * Plan names and limits are checked against the plans config here so the database never holds a plan
 * the server cannot apply.
 */
import { billingPeriodAt } from '../../protocol/billing-period.ts';
import { generateKey, hashesEqual, isWellFormedKey, keyPrefix, parseKey, type KeyMode } from '../../protocol/keys.ts';
import type { PlanCatalog } from '../../protocol/plans.ts';
import type { AccountRecord, KeyRecord } from '../../protocol/store.ts';
import type { Db } from './db.ts';
import { ACCOUNT_COLUMNS, KEY_COLUMNS, toAccount, toKey, type KeyAccountRow } from './rows.ts';

const DAY_MS = 86_400_000;

export interface PlanChange {
  plan: string;
  /** true: paid from now on; undefined: unchanged. */
  paid?: boolean;
  rpmLimit?: number;
  monthlyLimit?: number;
}

export interface KeyListing {
  key: KeyRecord;
  account: AccountRecord;
  /** Requests this key made in the current billing period. */
  requestsThisPeriod: number;
}

export class AccountAdmin {
  constructor(
    private readonly db: Db,
    private readonly plans: PlanCatalog,
  ) {}

  /** A new account (trial starting `now`) on `plan`, with its first key. Returns the key's secret once. */
  createAccount(opts: { plan: string; email?: string; mode: KeyMode; rpmLimit?: number; monthlyLimit?: number; now: number }): { secret: string; key: KeyRecord; account: AccountRecord } {
    const limits = this.checkPlan({ plan: opts.plan, rpmLimit: opts.rpmLimit, monthlyLimit: opts.monthlyLimit }, null);
    return this.db.transaction(() => {
      const { id } = this.db
        .prepare<unknown[], { id: number }>(
          'INSERT INTO accounts (email, plan, paid, trial_ends_at, rpm_limit, monthly_limit, created_at, updated_at) VALUES (?, ?, 0, ?, ?, ?, ?, ?) RETURNING id',
        )
        .get(opts.email ?? null, opts.plan, opts.now + this.plans.trialDays * DAY_MS, limits.rpmLimit, limits.monthlyLimit, opts.now, opts.now)!;
      return this.insertKey(id, opts.mode, opts.now);
    })();
  }

  /** Another key on an existing account (rotation: create the new one, then revoke the old). */
  addKey(accountId: number, mode: KeyMode, now: number): { secret: string; key: KeyRecord; account: AccountRecord } {
    return this.db.transaction(() => this.insertKey(accountId, mode, now))();
  }

  /** The key a CLI argument names: the whole key, or a prefix of its public prefix that matches exactly one key. */
  resolveKey(arg: string): KeyListing {
    const s = arg.trim();
    if (isWellFormedKey(s)) {
      const found = this.byPrefix(keyPrefix(s));
      if (found && hashesEqual(found.key.hash, parseKey(s)!.hash)) return found;
      throw new Error('no such key');
    }
    if (!/^svc_(live|test)_[A-Za-z0-9]{4,8}$/.test(s)) {
      throw new Error(`"${s}" is not a key prefix: give the prefix shown by \`svc keys list\` (svc_live_ or svc_test_ and at least 4 more characters)`);
    }
    const matches = this.listings('WHERE substr(k.prefix, 1, length(?)) = ?', 0, s, s);
    if (matches.length === 0) throw new Error(`no key has the prefix ${s}`);
    if (matches.length > 1) throw new Error(`the prefix ${s} matches ${matches.length} keys (${matches.map((m) => m.key.prefix).join(', ')}); give more characters`);
    return matches[0];
  }

  listKeys(opts: { includeRevoked: boolean; now: number }): KeyListing[] {
    return this.listings(opts.includeRevoked ? '' : 'WHERE k.revoked_at IS NULL', opts.now);
  }

  /** Revokes a key; revoking a revoked key is an error so a mistyped prefix is noticed. */
  revokeKey(keyId: number, now: number): void {
    const r = this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now, keyId);
    if (r.changes !== 1) throw new Error('the key is already revoked');
  }

  setPlan(accountId: number, change: PlanChange, now: number): AccountRecord {
    const current = this.account(accountId);
    const limits = this.checkPlan(change, current);
    this.db
      .prepare('UPDATE accounts SET plan = ?, paid = ?, rpm_limit = ?, monthly_limit = ?, updated_at = ? WHERE id = ?')
      .run(change.plan, (change.paid ?? current.paid) ? 1 : 0, limits.rpmLimit, limits.monthlyLimit, now, accountId);
    return this.account(accountId);
  }

  account(id: number): AccountRecord {
    const row = this.db.prepare(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = ?`).get(id);
    if (!row) throw new Error(`no account ${id}`);
    return toAccount(row as Parameters<typeof toAccount>[0]);
  }

  private byPrefix(prefix: string): KeyListing | undefined {
    return this.listings('WHERE k.prefix = ?', 0, prefix)[0];
  }

  private listings(where: string, now: number, ...args: unknown[]): KeyListing[] {
    const rows = this.db
      .prepare<unknown[], KeyAccountRow & { requests: number }>(
        `SELECT ${KEY_COLUMNS}, ${ACCOUNT_COLUMNS},
           (SELECT COALESCE(SUM(u.requests), 0) FROM usage u WHERE u.key_id = k.id AND u.period_start = ?) AS requests
         FROM api_keys k JOIN accounts a ON a.id = k.account_id ${where} ORDER BY k.id`,
      )
      .all(billingPeriodAt(now).start, ...args);
    return rows.map((r) => ({ key: toKey(r), account: toAccount(r), requestsThisPeriod: r.requests }));
  }

  private insertKey(accountId: number, mode: KeyMode, now: number): { secret: string; key: KeyRecord; account: AccountRecord } {
    const insert = this.db.prepare('INSERT OR IGNORE INTO api_keys (account_id, prefix, hash, mode, created_at) VALUES (?, ?, ?, ?, ?)');
    // Public prefixes are 8 random characters; on the rare collision draw again.
    for (let attempt = 0; attempt < 5; attempt++) {
      const k = generateKey(mode);
      // better-sqlite3 binds Buffers as BLOBs (the protocol's hashes are plain Uint8Arrays).
      if (insert.run(accountId, k.prefix, Buffer.from(k.hash.buffer, k.hash.byteOffset, k.hash.byteLength), mode, now).changes === 1) {
        const found = this.byPrefix(k.prefix)!;
        return { secret: k.key, key: found.key, account: found.account };
      }
    }
    throw new Error('could not draw an unused key prefix');
  }

  /** Per-account limits are for plans without their own (Enterprise) and required there. */
  private checkPlan(change: { plan: string; rpmLimit?: number; monthlyLimit?: number }, current: AccountRecord | null): { rpmLimit: number | null; monthlyLimit: number | null } {
    const plan = this.plans.get(change.plan);
    if (!plan) throw new Error(`unknown plan "${change.plan}"; plans: ${this.plans.ids().join(', ')}`);
    const perAccount = plan.requestsPerMinute === null;
    if (!perAccount) {
      if (change.rpmLimit !== undefined || change.monthlyLimit !== undefined) {
        throw new Error(`the ${plan.name} plan has fixed limits (${plan.requestsPerMinute}/min, ${plan.requestsPerMonth}/month); --rpm and --monthly are for plans with per-account limits`);
      }
      return { rpmLimit: null, monthlyLimit: null };
    }
    const keep = current?.plan === change.plan ? current : null;
    const rpmLimit = change.rpmLimit ?? keep?.rpmLimit ?? null;
    const monthlyLimit = change.monthlyLimit ?? keep?.monthlyLimit ?? null;
    if (rpmLimit === null || monthlyLimit === null) throw new Error(`the ${plan.name} plan's limits are set per account: give --rpm N and --monthly N`);
    return { rpmLimit, monthlyLimit };
  }
}
