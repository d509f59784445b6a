/**
 * What the service needs from storage. Synchronous on purpose: the SQLite implementation is, and a
 * synchronous check-then-write cannot interleave with another request's.
 */
import type { ConversationStore } from './conversations.ts';
import type { KeyMode } from './keys.ts';

export interface AccountRecord {
  id: number;
  email: string | null;
  plan: string;
  /** Set by `svc plan set … --paid`; an unpaid account can use the service until its trial ends. */
  paid: boolean;
  trialEndsAt: number;
  /** Per-account limits for plans without their own (Enterprise). */
  rpmLimit: number | null;
  monthlyLimit: number | null;
  createdAt: number;
}

export interface KeyRecord {
  id: number;
  accountId: number;
  prefix: string;
  hash: Uint8Array;
  mode: KeyMode;
  createdAt: number;
  revokedAt: number | null;
}

export interface UsageRow {
  specialist: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

export interface UsageEntry {
  keyId: number;
  /** Start of the billing period the request was admitted in. */
  periodStart: number;
  specialist: string;
  promptTokens: number;
  completionTokens: number;
}

export interface Store extends ConversationStore {
  /** The key with this public prefix and its account. */
  findKey(prefix: string): { key: KeyRecord; account: AccountRecord } | undefined;
  /** Requests this key made in the period (sum over specialists). */
  requestsInPeriod(keyId: number, periodStart: number): number;
  usageInPeriod(keyId: number, periodStart: number): UsageRow[];
  /** Counts one request; durable when it returns. */
  recordUsage(entry: UsageEntry): void;
}
