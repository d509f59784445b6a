/**
 * What the service needs from storage. Each method may answer at once (SQLite, in memory: a synchronous
 * check-then-write cannot interleave with another request's) or with a promise (PostgreSQL, shared by
 * replicas); the protocol awaits either. A store that cannot reach its database throws an ApiError 503
 * with Retry-After (backendUnavailable), never a generic failure.
 */
import type { ConversationStore } from './conversations.ts';
import type { FineTuningStore } from './fine-tuning/records.ts';
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
  /**
   * Made by the server for each admitted request (never the client's x-request-id, which a caller could
   * repeat): a store shared by replicas writes an entry once however often the write is retried.
   */
  requestId?: string;
  keyId: number;
  /** Start of the billing period the request was admitted in. */
  periodStart: number;
  specialist: string;
  promptTokens: number;
  completionTokens: number;
}

/** A value now, or later. */
export type Awaitable<T> = T | Promise<T>;

export interface Store extends ConversationStore {
  /** The key with this public prefix and its account. */
  findKey(prefix: string): Awaitable<{ key: KeyRecord; account: AccountRecord } | undefined>;
  /** Requests this key made in the period (sum over specialists). */
  requestsInPeriod(keyId: number, periodStart: number): Awaitable<number>;
  usageInPeriod(keyId: number, periodStart: number): Awaitable<UsageRow[]>;
  /** Counts one request (once per requestId); durable when it returns (or its promise resolves). */
  recordUsage(entry: UsageEntry): Awaitable<void>;
  /** Files, fine-tuning jobs and fine-tuned models; absent where the store cannot keep them (the browser's). */
  readonly fineTuning?: FineTuningStore;
}
