/**
 * The service's Store in a browser: one local account and its key, usage per billing period and chat
 * memory, held in memory (the Store interface is synchronous, and a check-then-write must not interleave)
 * and written through to IndexedDB so they survive a reload and a service worker being stopped.
 *
 * The page's origin is the trust boundary: the key is kept in clear so a page of this origin can read it
 * (startLocalService hands it over). Limits and plans still apply, so a page can show what a hosted
 * plan would allow. Usage increments are read-modify-write transactions in IndexedDB, so two workers of
 * one origin (the dedicated-worker fallback in two tabs) never lose each other's counts; each worker's
 * in-memory view sees its own requests only until it restarts.
 */
import { hashKey, generateKey, keyPrefix, type KeyMode } from '../../protocol/keys.ts';
import { MAX_STORED_TURNS, type ConversationTurn } from '../../protocol/conversations.ts';
import type { PlanCatalog } from '../../protocol/plans.ts';
import type { AccountRecord, KeyRecord, Store, UsageEntry, UsageRow } from '../../protocol/store.ts';
import { committed, openDatabase, requestResult } from './idb.ts';

const DB_VERSION = 1;
const META = 'meta';
const USAGE = 'usage';
const TURNS = 'turns';
const LOCAL = 'local';

export interface LocalAccountSettings {
  /** A plan id of the catalog (default `scale`: every specialist and feature). */
  plan: string;
  /** Per-account limits, for plans whose limits are set per account (enterprise). */
  rpmLimit?: number;
  monthlyLimit?: number;
}

interface LocalAccount {
  account: AccountRecord;
  key: KeyRecord;
  secret: string;
}

interface UsageRecord extends UsageRow {
  keyId: number;
  periodStart: number;
}

export interface LocalStoreOptions extends LocalAccountSettings {
  plans: PlanCatalog;
  now: number;
  /** IndexedDB database name; null keeps everything in memory only (lost on reload). */
  dbName: string | null;
  mode?: KeyMode;
}

export class LocalStore implements Store {
  private readonly usage = new Map<string, UsageRecord>();
  private readonly turns = new Map<string, ConversationTurn[]>();
  private writes: Promise<void> = Promise.resolve();
  /** The last write that failed (quota, a cleared database); the in-memory state stays authoritative. */
  lastWriteError: Error | undefined;

  private constructor(
    private local: LocalAccount,
    private readonly db: IDBDatabase | null,
  ) {}

  /** Opens (or creates) the local account: its key is made once and kept; the plan follows the settings. */
  static async open(opts: LocalStoreOptions): Promise<LocalStore> {
    const plan = opts.plans.get(opts.plan);
    if (!plan) throw new Error(`unknown plan "${opts.plan}" for the local account; plans: ${opts.plans.ids().join(', ')}`);
    if (plan.requestsPerMinute === null && (opts.rpmLimit === undefined || opts.monthlyLimit === undefined)) {
      throw new Error(`plan "${opts.plan}" sets its limits per account: give rpmLimit and monthlyLimit for the local account`);
    }
    const db = opts.dbName === null ? null : await openDatabase(opts.dbName, DB_VERSION, upgrade);
    let local = db ? ((await requestResult(db.transaction(META).objectStore(META).get(LOCAL))) as LocalAccount | undefined) : undefined;
    const wanted = { plan: opts.plan, rpmLimit: opts.rpmLimit ?? null, monthlyLimit: opts.monthlyLimit ?? null };
    if (!local) local = newLocalAccount(opts.now, opts.mode ?? 'live');
    // The settings win over what was stored: the site's operator changes the plan by changing its config.
    local = { ...local, account: { ...local.account, ...wanted, paid: true } };
    const store = new LocalStore(local, db);
    if (db) {
      await store.load(db);
      await store.write(META, (s) => s.put(local, LOCAL));
    }
    return store;
  }

  /** The local account's key, in clear (see the file comment for why that is acceptable here). */
  get apiKey(): string {
    return this.local.secret;
  }

  get account(): AccountRecord {
    return this.local.account;
  }

  /** Resolves when every write made so far has reached IndexedDB. */
  flushed(): Promise<void> {
    return this.writes;
  }

  findKey(prefix: string): { key: KeyRecord; account: AccountRecord } | undefined {
    return prefix === this.local.key.prefix && this.local.key.revokedAt === null ? { key: this.local.key, account: this.local.account } : undefined;
  }

  requestsInPeriod(keyId: number, periodStart: number): number {
    return this.usageInPeriod(keyId, periodStart).reduce((n, r) => n + r.requests, 0);
  }

  usageInPeriod(keyId: number, periodStart: number): UsageRow[] {
    return [...this.usage.values()]
      .filter((r) => r.keyId === keyId && r.periodStart === periodStart)
      .sort((a, b) => (a.specialist < b.specialist ? -1 : 1))
      .map(({ specialist, requests, promptTokens, completionTokens }) => ({ specialist, requests, promptTokens, completionTokens }));
  }

  recordUsage(e: UsageEntry): void {
    const id = usageId(e.keyId, e.periodStart, e.specialist);
    const add = (r: UsageRecord | undefined): UsageRecord => ({
      keyId: e.keyId,
      periodStart: e.periodStart,
      specialist: e.specialist,
      requests: (r?.requests ?? 0) + 1,
      promptTokens: (r?.promptTokens ?? 0) + e.promptTokens,
      completionTokens: (r?.completionTokens ?? 0) + e.completionTokens,
    });
    this.usage.set(id, add(this.usage.get(id)));
    void this.write(USAGE, async (s) => s.put(add((await requestResult(s.get(id))) as UsageRecord | undefined), id));
  }

  conversationTurns(keyId: number, conversationId: string, limit: number): ConversationTurn[] {
    const all = this.turns.get(turnsId(keyId, conversationId)) ?? [];
    return all.slice(Math.max(0, all.length - limit));
  }

  appendTurns(keyId: number, conversationId: string, turns: readonly ConversationTurn[], _now: number, keep: number): void {
    const id = turnsId(keyId, conversationId);
    const all = [...(this.turns.get(id) ?? []), ...turns.map((t) => ({ role: t.role, content: t.content }))];
    const kept = all.slice(Math.max(0, all.length - Math.min(keep, MAX_STORED_TURNS)));
    this.turns.set(id, kept);
    void this.write(TURNS, (s) => s.put(kept, id));
  }

  close(): void {
    this.db?.close();
  }

  private async load(db: IDBDatabase): Promise<void> {
    const tx = db.transaction([USAGE, TURNS]);
    const [usageKeys, usageRows, turnKeys, turnRows] = await Promise.all([
      requestResult(tx.objectStore(USAGE).getAllKeys()),
      requestResult(tx.objectStore(USAGE).getAll()),
      requestResult(tx.objectStore(TURNS).getAllKeys()),
      requestResult(tx.objectStore(TURNS).getAll()),
    ]);
    usageKeys.forEach((k, i) => this.usage.set(String(k), usageRows[i] as UsageRecord));
    turnKeys.forEach((k, i) => this.turns.set(String(k), turnRows[i] as ConversationTurn[]));
  }

  /** One readwrite transaction on `store`, queued after the ones before it. */
  private write(store: string, body: (s: IDBObjectStore) => unknown): Promise<void> {
    const db = this.db;
    if (!db) return this.writes;
    this.writes = this.writes.then(async () => {
      try {
        const tx = db.transaction(store, 'readwrite');
        const done = committed(tx);
        await body(tx.objectStore(store));
        await done;
      } catch (e) {
        this.lastWriteError = e instanceof Error ? e : new Error(String(e));
      }
    });
    return this.writes;
  }
}

function upgrade(db: IDBDatabase): void {
  for (const name of [META, USAGE, TURNS]) if (!db.objectStoreNames.contains(name)) db.createObjectStore(name);
}

function newLocalAccount(now: number, mode: KeyMode): LocalAccount {
  const k = generateKey(mode);
  const account: AccountRecord = { id: 1, email: null, plan: 'scale', paid: true, trialEndsAt: now, rpmLimit: null, monthlyLimit: null, createdAt: now };
  const key: KeyRecord = { id: 1, accountId: 1, prefix: keyPrefix(k.key), hash: hashKey(k.key), mode, createdAt: now, revokedAt: null };
  return { account, key, secret: k.key };
}

function usageId(keyId: number, periodStart: number, specialist: string): string {
  return `${keyId}|${periodStart}|${specialist}`;
}

function turnsId(keyId: number, conversationId: string): string {
  return `${keyId}|${conversationId}`;
}
