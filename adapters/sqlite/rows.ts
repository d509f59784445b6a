/** Row ↔ record mapping for the SQLite tables. */
import type { KeyMode } from '../../protocol/keys.ts';
import type { AccountRecord, KeyRecord } from '../../protocol/store.ts';

export interface AccountRow {
  id: number;
  email: string | null;
  plan: string;
  paid: number;
  trial_ends_at: number;
  rpm_limit: number | null;
  monthly_limit: number | null;
  created_at: number;
}

export interface KeyRow {
  id: number;
  account_id: number;
  prefix: string;
  hash: Buffer;
  mode: string;
  created_at: number;
  revoked_at: number | null;
}

export const ACCOUNT_COLUMNS = 'a.id, a.email, a.plan, a.paid, a.trial_ends_at, a.rpm_limit, a.monthly_limit, a.created_at';
export const KEY_COLUMNS = 'k.id AS key_id, k.account_id, k.prefix, k.hash, k.mode, k.created_at AS key_created_at, k.revoked_at';

export type KeyAccountRow = AccountRow & { key_id: number; account_id: number; prefix: string; hash: Buffer; mode: string; key_created_at: number; revoked_at: number | null };

export function toAccount(r: AccountRow): AccountRecord {
  return {
    id: r.id,
    email: r.email,
    plan: r.plan,
    paid: r.paid === 1,
    trialEndsAt: r.trial_ends_at,
    rpmLimit: r.rpm_limit,
    monthlyLimit: r.monthly_limit,
    createdAt: r.created_at,
  };
}

export function toKey(r: KeyAccountRow): KeyRecord {
  return {
    id: r.key_id,
    accountId: r.account_id,
    prefix: r.prefix,
    hash: r.hash,
    mode: r.mode as KeyMode,
    createdAt: r.key_created_at,
    revokedAt: r.revoked_at,
  };
}
