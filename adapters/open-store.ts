/**
 * Opens the store a process runs on, with the admin for the same data: SQLite in a data folder (the
 * default; synchronous) or PostgreSQL at a postgres:// URL (shared by replicas; migrated here, before
 * anything is served). `svc serve`, `svc keys` and `svc plan` choose the same way (resolveStoreSpec).
 */
import { ApiError } from '../protocol/errors.ts';
import type { Logger } from '../protocol/logger.ts';
import type { PlanCatalog } from '../protocol/plans.ts';
import type { Store } from '../protocol/store.ts';
import { SqliteAdmin, type Admin } from './admin.ts';
import { PostgresAdmin } from './postgres/accounts.ts';
import { migratePostgres } from './postgres/migrations.ts';
import { isPostgresUrl, openPostgres, type PostgresOptions } from './postgres/pool.ts';
import { PostgresStore } from './postgres/store.ts';
import { AccountAdmin } from './sqlite/accounts.ts';
import { openDatabase, resolveDataDir, type Db } from './sqlite/db.ts';
import { SqliteStore } from './sqlite/store.ts';

/** Where the data is: a PostgreSQL URL, else a data folder. */
export interface StoreSpec {
  dataDir?: string;
  url?: string;
}

export interface OpenedStore {
  kind: 'sqlite' | 'postgres';
  /** The data folder, or host:port/database (never the URL's user or password): for logs. */
  where: string;
  store: Store;
  /** Shares the store's connection: its close() closes both, as does this close(). */
  admin: Admin;
  /** With SQLite, its database and store (synchronous), for callers that use them directly. */
  sqlite?: { db: Db; store: SqliteStore; accounts: AccountAdmin };
  /** Closes the database (once; later calls do nothing). */
  close(): Promise<void>;
}

export interface OpenStoreOptions extends PostgresOptions {
  logger?: Logger;
}

export const STORE_ENV = 'SVC_STORE';

/**
 * The store that flags and environment name: `--store <url>`, else `--data <dir>`, else $SVC_STORE,
 * else $SVC_DATA_DIR or ./data. Both flags at once is a mistake (two different stores).
 */
export function resolveStoreSpec(flags: { data?: string; store?: string }, env: NodeJS.ProcessEnv = process.env): StoreSpec {
  if (flags.store !== undefined && flags.data !== undefined) throw new Error('--data and --store name two different stores; give one of them');
  const url = flags.store ?? (flags.data === undefined ? env[STORE_ENV]?.trim() || undefined : undefined);
  if (url !== undefined) {
    // The value is not echoed: it may hold a password.
    if (!isPostgresUrl(url)) throw new Error(`--store (or $${STORE_ENV}) takes a PostgreSQL URL: postgres://user:password@host:port/database`);
    return { url };
  }
  return { dataDir: resolveDataDir(flags.data) };
}

/** SQLite in `dataDir`, opened (and migrated) at once. */
export function openSqliteStore(dataDir: string, plans: PlanCatalog): OpenedStore & { sqlite: NonNullable<OpenedStore['sqlite']> } {
  const db = openDatabase(dataDir);
  const store = new SqliteStore(db);
  const accounts = new AccountAdmin(db, plans);
  const close = async () => {
    if (db.open) db.close();
  };
  return { kind: 'sqlite', where: dataDir, store, admin: new SqliteAdmin(accounts, close), sqlite: { db, store, accounts }, close };
}

/**
 * The store `spec` names, ready to serve: PostgreSQL is migrated first (replicas starting together take
 * turns). A PostgreSQL that cannot be reached is an Error naming host:port/database and pg's reason.
 */
export async function openStore(spec: StoreSpec, plans: PlanCatalog, opts: OpenStoreOptions = {}): Promise<OpenedStore> {
  if (spec.url === undefined) return openSqliteStore(spec.dataDir ?? resolveDataDir(), plans);
  const db = openPostgres(spec.url, opts);
  try {
    await migratePostgres(db);
  } catch (e) {
    await db.close().catch(() => {});
    if (e instanceof ApiError && e.code === 'backend_unavailable') {
      const reason = e.cause instanceof Error ? e.cause.message : 'no answer';
      throw new Error(`cannot reach PostgreSQL at ${db.where} (--store or $${STORE_ENV}): ${reason}`);
    }
    throw e;
  }
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= db.close());
  return { kind: 'postgres', where: db.where, store: new PostgresStore(db), admin: new PostgresAdmin(db, plans, close), close };
}
