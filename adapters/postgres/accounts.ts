/**
 * The account admin on PostgreSQL (`svc keys` / `svc plan --store postgres://…`): the same methods, checks
 * and messages as SQLite's (adapters/sqlite/accounts.ts, the rules in adapters/account-rules.ts). Writes
 * that read first (a plan change keeps Enterprise limits) lock the account row for their transaction.
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
import type { Admin } from '../admin.ts';
import type { Postgres, Queryable } from './pool.ts';
import { ACCOUNT_COLUMNS, bytea, KEY_COLUMNS, num, toAccount, toKey, type AccountRow, type KeyAccountRow } from './rows.ts';

export class PostgresAdmin implements Admin {
  private closed = false;

  constructor(
    private readonly db: Postgres,
    private readonly plans: PlanCatalog,
    /** What close() does (default: close the pool). */
    private readonly onClose: () => Promise<void> = () => db.close(),
  ) {}

  async createAccount(opts: NewAccount): Promise<CreatedKey> {
    const limits = checkPlan(this.plans, { plan: opts.plan, rpmLimit: opts.rpmLimit, monthlyLimit: opts.monthlyLimit }, null);
    return this.db.transaction(async (q) => {
      const { rows } = await q.query<{ id: string }>(
        'INSERT INTO accounts (email, plan, paid, trial_ends_at, rpm_limit, monthly_limit, created_at, updated_at) VALUES ($1, $2, false, $3, $4, $5, $6, $6) RETURNING id',
        [opts.email ?? null, opts.plan, trialEnd(this.plans, opts.now), limits.rpmLimit, limits.monthlyLimit, opts.now],
      );
      return this.insertKey(q, num(rows[0].id), opts.mode, opts.now);
    });
  }

  async addKey(accountId: number, mode: KeyMode, now: number): Promise<CreatedKey> {
    return this.db.transaction(async (q) => {
      const { rowCount } = await q.query('SELECT 1 FROM accounts WHERE id = $1 FOR SHARE', [accountId]);
      if (rowCount !== 1) throw noAccount(accountId);
      return this.insertKey(q, accountId, mode, now);
    });
  }

  async resolveKey(arg: string): Promise<KeyListing> {
    const named = keyArgument(arg);
    if (named.whole) {
      const found = (await listings(this.db, 'WHERE k.prefix = $2', 0, named.prefix))[0];
      if (found && hashesEqual(found.key.hash, named.hash)) return found;
      throw new Error(NO_SUCH_KEY);
    }
    return onlyMatch(named.start, await listings(this.db, 'WHERE starts_with(k.prefix, $2)', 0, named.start));
  }

  listKeys(opts: { includeRevoked: boolean; now: number }): Promise<KeyListing[]> {
    return listings(this.db, opts.includeRevoked ? '' : 'WHERE k.revoked_at IS NULL', opts.now);
  }

  async revokeKey(keyId: number, now: number): Promise<void> {
    const { rowCount } = await this.db.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, keyId]);
    if (rowCount !== 1) throw new Error(ALREADY_REVOKED);
  }

  async setPlan(accountId: number, change: PlanChange, now: number): Promise<AccountRecord> {
    return this.db.transaction(async (q) => {
      const current = await account(q, accountId, 'FOR UPDATE');
      const limits = checkPlan(this.plans, change, current);
      await q.query('UPDATE accounts SET plan = $1, paid = $2, rpm_limit = $3, monthly_limit = $4, updated_at = $5 WHERE id = $6', [
        change.plan,
        change.paid ?? current.paid,
        limits.rpmLimit,
        limits.monthlyLimit,
        now,
        accountId,
      ]);
      return account(q, accountId);
    });
  }

  account(id: number): Promise<AccountRecord> {
    return account(this.db, id);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.onClose();
  }

  private async insertKey(q: Queryable, accountId: number, mode: KeyMode, now: number): Promise<CreatedKey> {
    // Public prefixes are 8 random characters; on the rare collision draw again (DO NOTHING keeps the transaction usable).
    for (let attempt = 0; attempt < KEY_DRAWS; attempt++) {
      const k = generateKey(mode);
      const { rowCount } = await q.query('INSERT INTO api_keys (account_id, prefix, hash, mode, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING', [
        accountId,
        k.prefix,
        bytea(k.hash),
        mode,
        now,
      ]);
      if (rowCount === 1) {
        const found = (await listings(q, 'WHERE k.prefix = $2', 0, k.prefix))[0];
        return { secret: k.key, key: found.key, account: found.account };
      }
    }
    throw new Error(NO_FREE_PREFIX);
  }
}

async function account(q: Queryable, id: number, lock = ''): Promise<AccountRecord> {
  const { rows } = await q.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = $1 ${lock}`, [id]);
  if (!rows[0]) throw noAccount(id);
  return toAccount(rows[0]);
}

/** Keys with their account and this period's requests; `where` uses $2… for `args` ($1 is the period). */
async function listings(q: Queryable, where: string, now: number, ...args: unknown[]): Promise<KeyListing[]> {
  const { rows } = await q.query<KeyAccountRow & { requests: string }>(
    `SELECT ${KEY_COLUMNS}, ${ACCOUNT_COLUMNS},
       (SELECT coalesce(sum(u.requests), 0)::bigint FROM usage u WHERE u.key_id = k.id AND u.period_start = $1) AS requests
     FROM api_keys k JOIN accounts a ON a.id = k.account_id ${where} ORDER BY k.id`,
    [billingPeriodAt(now).start, ...args],
  );
  return rows.map((r) => ({ key: toKey(r), account: toAccount(r), requestsThisPeriod: num(r.requests) }));
}
