/**
 * `svc keys create | list | revoke`: API keys, as a dashboard would manage them. The new key is printed
 * once, alone on stdout's last line (details go to stderr), so `KEY=$(svc keys create …)` works.
 */
import { type Command } from 'commander';
import { type Admin } from '../../adapters/admin.ts';
import { openStore, resolveStoreSpec, STORE_ENV } from '../../adapters/open-store.ts';
import { billingPeriodAt } from '../../protocol/billing-period.ts';
import { effectiveLimits } from '../../protocol/plans.ts';
import type { AccountRecord } from '../../protocol/store.ts';
import { intOption } from '../options.ts';
import { loadPlans } from '../../adapters/config-node.ts';

export const DATA_OPTION_HELP = 'data folder holding svc.sqlite (default: $SVC_DATA_DIR or ./data); the one `svc serve` uses';
export const STORE_OPTION_HELP = `PostgreSQL to use instead of the data folder: postgres://user@host:port/database (default: $${STORE_ENV}; a password is better in $PGPASSWORD than on the command line); the one \`svc serve --store\` uses`;

/** Where `svc keys` and `svc plan` find the accounts: --store, else --data, else $SVC_STORE, else the default data folder. */
export interface StoreFlags {
  data?: string;
  store?: string;
}

/** Opens the store the flags name, runs `fn` with its admin, closes it whatever happens. */
export async function withAdmin<T>(flags: StoreFlags, fn: (admin: Admin) => T | Promise<T>): Promise<T> {
  const plans = loadPlans();
  const opened = await openStore(resolveStoreSpec(flags), plans);
  try {
    return await fn(opened.admin);
  } finally {
    await opened.close();
  }
}

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('create, list and revoke API keys');

  keys
    .command('create')
    .description('create a key: for a new account on --plan (its 7-day trial starts now), or for the account of --account')
    .option('--plan <plan>', 'plan of the new account (see `svc plan list`)')
    .option('--test', 'a sandbox key (svc_test_…) instead of a production key (svc_live_…)')
    .option('--email <email>', "the new account's e-mail")
    .option('--account <key-prefix>', 'add the key to the account that owns this key (rotation: create, then revoke the old one)')
    .option('--rpm <n>', 'requests per minute, for plans with per-account limits (Enterprise)', intOption('--rpm', 1))
    .option('--monthly <n>', 'requests per month, for plans with per-account limits (Enterprise)', intOption('--monthly', 1))
    .option('--data <dir>', DATA_OPTION_HELP)
    .option('--store <url>', STORE_OPTION_HELP)
    .action(async (opts: { plan?: string; test?: boolean; email?: string; account?: string; rpm?: number; monthly?: number } & StoreFlags) => {
      if (opts.email !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(opts.email)) throw new Error(`--email "${opts.email}" is not an e-mail address`);
      const mode = opts.test ? 'test' : 'live';
      const created = await withAdmin(opts, async (admin) => {
        if (opts.account !== undefined) {
          if (opts.plan || opts.email || opts.rpm || opts.monthly) throw new Error('--account adds a key to an existing account; --plan, --email, --rpm and --monthly belong to new accounts');
          return admin.addKey((await admin.resolveKey(opts.account)).account.id, mode, Date.now());
        }
        if (!opts.plan) throw new Error('give --plan <plan> for a new account, or --account <key-prefix> to add a key to an existing one');
        return admin.createAccount({ plan: opts.plan, email: opts.email, mode, rpmLimit: opts.rpm, monthlyLimit: opts.monthly, now: Date.now() });
      });
      const kind = mode === 'live' ? 'production' : 'sandbox';
      process.stderr.write(`created ${kind} key ${created.key.prefix} for account ${created.account.id} (${describeAccount(created.account)})\n`);
      process.stderr.write('the key follows on stdout; it is shown only this once:\n');
      process.stdout.write(`${created.secret}\n`);
    });

  keys
    .command('list')
    .description('list keys with their account, plan, trial and this period’s requests')
    .option('--all', 'include revoked keys')
    .option('--json', 'print JSON')
    .option('--data <dir>', DATA_OPTION_HELP)
    .option('--store <url>', STORE_OPTION_HELP)
    .action(async (opts: { all?: boolean; json?: boolean } & StoreFlags) => {
      const now = Date.now();
      const rows = await withAdmin(opts, (admin) => admin.listKeys({ includeRevoked: !!opts.all, now }));
      const plans = loadPlans();
      const items = rows.map((r) => {
        const plan = plans.get(r.account.plan);
        return {
          prefix: r.key.prefix,
          mode: r.key.mode,
          account: r.account.id,
          email: r.account.email,
          plan: r.account.plan,
          paid: r.account.paid,
          trial_ends_at: new Date(r.account.trialEndsAt).toISOString(),
          requests_this_period: r.requestsThisPeriod,
          requests_limit: plan ? (effectiveLimits(plan, r.account)?.perMonth ?? null) : null,
          created_at: new Date(r.key.createdAt).toISOString(),
          revoked_at: r.key.revokedAt === null ? null : new Date(r.key.revokedAt).toISOString(),
        };
      });
      if (opts.json) {
        process.stdout.write(JSON.stringify(items, null, 2) + '\n');
        return;
      }
      if (items.length === 0) {
        process.stdout.write('no keys\n');
        return;
      }
      const period = billingPeriodAt(now);
      const table = [
        ['PREFIX', 'MODE', 'ACCOUNT', 'EMAIL', 'PLAN', 'STATUS', `REQUESTS ${new Date(period.start).toISOString().slice(0, 7)}`, 'CREATED', 'REVOKED'],
        ...rows.map((r, i) => [
          r.key.prefix,
          r.key.mode,
          String(r.account.id),
          r.account.email ?? '-',
          r.account.plan,
          status(r.account, now),
          `${items[i].requests_this_period}/${items[i].requests_limit ?? '?'}`,
          items[i].created_at.slice(0, 10),
          items[i].revoked_at?.slice(0, 10) ?? '-',
        ]),
      ];
      const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
      process.stdout.write(table.map((row) => row.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd()).join('\n') + '\n');
    });

  keys
    .command('revoke <key-prefix>')
    .description('revoke a key at once: its next request gets 401')
    .option('--data <dir>', DATA_OPTION_HELP)
    .option('--store <url>', STORE_OPTION_HELP)
    .action(async (prefix: string, opts: StoreFlags) => {
      const revoked = await withAdmin(opts, async (admin) => {
        const found = await admin.resolveKey(prefix);
        await admin.revokeKey(found.key.id, Date.now());
        return found;
      });
      process.stdout.write(`revoked ${revoked.key.prefix} (account ${revoked.account.id})\n`);
    });
}

export function describeAccount(a: AccountRecord): string {
  return `plan ${a.plan}, ${status(a, Date.now())}`;
}

function status(a: AccountRecord, now: number): string {
  if (a.paid) return 'paid';
  const day = new Date(a.trialEndsAt).toISOString().slice(0, 16).replace('T', ' ');
  return now < a.trialEndsAt ? `trial until ${day}Z` : `trial ended ${day}Z`;
}
