/** Row ↔ record mapping for the PostgreSQL tables. bigint columns arrive as strings (pg's default) and become numbers here. */
import type { KeyMode } from '../../protocol/keys.ts';
import type { AccountRecord, KeyRecord } from '../../protocol/store.ts';

type BigInt8 = string | number;

export interface KeyAccountRow {
  id: BigInt8;
  email: string | null;
  plan: string;
  paid: boolean;
  trial_ends_at: BigInt8;
  rpm_limit: BigInt8 | null;
  monthly_limit: BigInt8 | null;
  created_at: BigInt8;
  key_id: BigInt8;
  account_id: BigInt8;
  prefix: string;
  hash: Buffer;
  mode: string;
  key_created_at: BigInt8;
  revoked_at: BigInt8 | null;
}

export type AccountRow = Pick<KeyAccountRow, 'id' | 'email' | 'plan' | 'paid' | 'trial_ends_at' | 'rpm_limit' | 'monthly_limit' | 'created_at'>;

export const ACCOUNT_COLUMNS = 'a.id, a.email, a.plan, a.paid, a.trial_ends_at, a.rpm_limit, a.monthly_limit, a.created_at';
export const KEY_COLUMNS = 'k.id AS key_id, k.account_id, k.prefix, k.hash, k.mode, k.created_at AS key_created_at, k.revoked_at';

/** A bigint column (ms since the epoch, ids, counts: all far below 2^53). */
export function num(v: BigInt8): number {
  return typeof v === 'number' ? v : Number(v);
}

function numOrNull(v: BigInt8 | null): number | null {
  return v === null ? null : num(v);
}

export function toAccount(r: AccountRow): AccountRecord {
  return {
    id: num(r.id),
    email: r.email,
    plan: r.plan,
    paid: r.paid,
    trialEndsAt: num(r.trial_ends_at),
    rpmLimit: numOrNull(r.rpm_limit),
    monthlyLimit: numOrNull(r.monthly_limit),
    createdAt: num(r.created_at),
  };
}

export function toKey(r: KeyAccountRow): KeyRecord {
  return {
    id: num(r.key_id),
    accountId: num(r.account_id),
    prefix: r.prefix,
    hash: r.hash,
    mode: r.mode as KeyMode,
    createdAt: num(r.key_created_at),
    revokedAt: numOrNull(r.revoked_at),
  };
}

/** pg binds a Buffer as bytea (the protocol's hashes are plain Uint8Arrays). */
export function bytea(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
