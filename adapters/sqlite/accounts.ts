/**
 * What a dashboard would do, for the CLI: create accounts and keys, list and revoke keys, change plans.
 * Plan names and limits are checked against the plans config (adapters/account-rules.ts) so the
 * database never holds a plan the server cannot apply. Synchronous; adapters/admin.ts wraps it in the
 * async Admin that PostgreSQL's admin also is.
 */
import { billingPeriodAt } from '../../protocol/billing-period.ts';
import { generateKey, hashesEqual, type KeyMode } from '../../protocol/keys.ts';
import type { PlanCatalog } from '../../protocol/plans.ts';
import type { AccountRecord } from '../../protocol/store.ts';
import {
  ALREADY_REVOKED,
  checkPlan,
  KEY_DRAWS,
  keyArgument,
  NO_FREE_PREFIX,
  NO_SUCH_KEY,
  noAccount,
  onlyMatch,
  trialEnd,
  type CreatedKey,
  type KeyListing,
  type NewAccount,
  type PlanChange,
} from '../account-rules.ts';
import type { Db } from './db.ts';
import { ACCOUNT_COLUMNS, KEY_COLUMNS, toAccount, toKey, type KeyAccountRow } from './rows.ts';

export type { CreatedKey, KeyListing, NewAccount, PlanChange } from '../account-rules.ts';

export class AccountAdmin {
  constructor(
    private readonly db: Db,
    private readonly plans: PlanCatalog,
  ) {}

  /** A new account (trial starting `now`) on `plan`, with its first key. Returns the key's secret once. */
  createAccount(opts: NewAccount): CreatedKey {
    const limits = checkPlan(this.plans, { plan: opts.plan, rpmLimit: opts.rpmLimit, monthlyLimit: opts.monthlyLimit }, null);
    return this.db.transaction(() => {
      const { id } = this.db
        .prepare<unknown[], { id: number }>(
          'INSERT INTO accounts (email, plan, paid, trial_ends_at, rpm_limit, monthly_limit, created_at, updated_at) VALUES (?, ?, 0, ?, ?, ?, ?, ?) RETURNING id',
        )
        .get(opts.email ?? null, opts.plan, trialEnd(this.plans, opts.now), limits.rpmLimit, limits.monthlyLimit, opts.now, opts.now)!;
      return this.insertKey(id, opts.mode, opts.now);
    })();
  }

  /** Another key on an existing account (rotation: create the new one, then revoke the old). */
  addKey(accountId: number, mode: KeyMode, now: number): CreatedKey {
    return this.db.transaction(() => this.insertKey(accountId, mode, now))();
  }

  /** The key a CLI argument names: the whole key, or a prefix of its public prefix that matches exactly one key. */
  resolveKey(arg: string): KeyListing {
    const named = keyArgument(arg);
    if (named.whole) {
      const found = this.byPrefix(named.prefix);
      if (found && hashesEqual(found.key.hash, named.hash)) return found;
      throw new Error(NO_SUCH_KEY);
    }
    return onlyMatch(named.start, this.listings('WHERE substr(k.prefix, 1, length(?)) = ?', 0, named.start, named.start));
  }

  listKeys(opts: { includeRevoked: boolean; now: number }): KeyListing[] {
    return this.listings(opts.includeRevoked ? '' : 'WHERE k.revoked_at IS NULL', opts.now);
  }

  /** Revokes a key; revoking a revoked key is an error so a mistyped prefix is noticed. */
  revokeKey(keyId: number, now: number): void {
    const r = this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now, keyId);
    if (r.changes !== 1) throw new Error(ALREADY_REVOKED);
  }

  setPlan(accountId: number, change: PlanChange, now: number): AccountRecord {
    const current = this.account(accountId);
    const limits = checkPlan(this.plans, change, current);
    this.db
      .prepare('UPDATE accounts SET plan = ?, paid = ?, rpm_limit = ?, monthly_limit = ?, updated_at = ? WHERE id = ?')
      .run(change.plan, (change.paid ?? current.paid) ? 1 : 0, limits.rpmLimit, limits.monthlyLimit, now, accountId);
    return this.account(accountId);
  }

  account(id: number): AccountRecord {
    const row = this.db.prepare(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = ?`).get(id);
    if (!row) throw noAccount(id);
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

  private insertKey(accountId: number, mode: KeyMode, now: number): CreatedKey {
    const insert = this.db.prepare('INSERT OR IGNORE INTO api_keys (account_id, prefix, hash, mode, created_at) VALUES (?, ?, ?, ?, ?)');
    // Public prefixes are 8 random characters; on the rare collision draw again.
    for (let attempt = 0; attempt < KEY_DRAWS; attempt++) {
      const k = generateKey(mode);
      // better-sqlite3 binds Buffers as BLOBs (the protocol's hashes are plain Uint8Arrays).
      if (insert.run(accountId, k.prefix, Buffer.from(k.hash.buffer, k.hash.byteOffset, k.hash.byteLength), mode, now).changes === 1) {
        const found = this.byPrefix(k.prefix)!;
        return { secret: k.key, key: found.key, account: found.account };
      }
    }
    throw new Error(NO_FREE_PREFIX);
  }
}
