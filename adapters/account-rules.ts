/**
 * What every account admin checks before it writes, whatever the database (SQLite, PostgreSQL): plan
 * names and per-account limits against the plans config, the trial's end, how a CLI argument names a key.
 * One place for these rules and their messages, so `svc keys` and `svc plan` answer alike on both.
 */
import { isWellFormedKey, keyPrefix, parseKey, type KeyMode } from '../protocol/keys.ts';
import type { PlanCatalog } from '../protocol/plans.ts';
import type { AccountRecord, KeyRecord } from '../protocol/store.ts';

const DAY_MS = 86_400_000;

export interface PlanChange {
  plan: string;
  /** true: paid from now on; undefined: unchanged. */
  paid?: boolean;
  rpmLimit?: number;
  monthlyLimit?: number;
}

export interface NewAccount {
  plan: string;
  email?: string;
  mode: KeyMode;
  rpmLimit?: number;
  monthlyLimit?: number;
  now: number;
}

export interface KeyListing {
  key: KeyRecord;
  account: AccountRecord;
  /** Requests this key made in the current billing period. */
  requestsThisPeriod: number;
}

/** A new key: its secret (shown once, never stored), the stored record and its account. */
export interface CreatedKey {
  secret: string;
  key: KeyRecord;
  account: AccountRecord;
}

/** Public prefixes are 8 random characters; on the rare collision a new key is drawn this many times at most. */
export const KEY_DRAWS = 5;
export const NO_FREE_PREFIX = 'could not draw an unused key prefix';

export function trialEnd(plans: PlanCatalog, now: number): number {
  return now + plans.trialDays * DAY_MS;
}

/** Per-account limits are for plans without their own (Enterprise) and required there. */
export function checkPlan(
  plans: PlanCatalog,
  change: { plan: string; rpmLimit?: number; monthlyLimit?: number },
  current: AccountRecord | null,
): { rpmLimit: number | null; monthlyLimit: number | null } {
  const plan = plans.get(change.plan);
  if (!plan) throw new Error(`unknown plan "${change.plan}"; plans: ${plans.ids().join(', ')}`);
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

/**
 * How a CLI argument names a key: the whole key (its prefix, checked against the stored hash) or the
 * start of a public prefix (svc_live_ or svc_test_ and 4 to 8 more characters).
 */
export type KeyArgument = { whole: true; prefix: string; hash: Uint8Array } | { whole: false; start: string };

export function keyArgument(arg: string): KeyArgument {
  const s = arg.trim();
  if (isWellFormedKey(s)) return { whole: true, prefix: keyPrefix(s), hash: parseKey(s)!.hash };
  if (!/^svc_(live|test)_[A-Za-z0-9]{4,8}$/.test(s)) {
    throw new Error(`"${s}" is not a key prefix: give the prefix shown by \`svc keys list\` (svc_live_ or svc_test_ and at least 4 more characters)`);
  }
  return { whole: false, start: s };
}

export const NO_SUCH_KEY = 'no such key';
export const ALREADY_REVOKED = 'the key is already revoked';

export function noAccount(id: number): Error {
  return new Error(`no account ${id}`);
}

/** The one key whose prefix starts with `start`, or an error naming none or all of them. */
export function onlyMatch(start: string, matches: readonly KeyListing[]): KeyListing {
  if (matches.length === 0) throw new Error(`no key has the prefix ${start}`);
  if (matches.length > 1) throw new Error(`the prefix ${start} matches ${matches.length} keys (${matches.map((m) => m.key.prefix).join(', ')}); give more characters`);
  return matches[0];
}
