/**
 * The connection pool to PostgreSQL (the `pg` package), shared by the store and the admin of one
 * process. Nothing waits long: connecting gives up after 2 s, a statement after 5 s (statement_timeout
 * on the server, and a slightly longer read timeout here for a server that went silent), and every
 * failure to reach the server becomes 503 backend_unavailable (errors.ts). pg's pool drops a broken
 * connection and opens a new one for the next query, so service resumes by itself once the server is back.
 *
 * Logged: that the database became unreachable (once per outage, with pg's reason) and reachable
 * again; never a query's values (keys' hashes, prompts) and never the URL's password.
 */
import pg from 'pg';
import { silentLogger, type Logger } from '../../protocol/logger.ts';
import { databaseUnavailable, isUnreachable } from './errors.ts';

export interface PostgresOptions {
  logger?: Logger;
  /** How long opening a connection (or waiting for a free one) may take (default 2000 ms). */
  connectTimeoutMs?: number;
  /** How long one statement may run (default 5000 ms). */
  statementTimeoutMs?: number;
  /** Connections at most (default 10). */
  maxConnections?: number;
}

/** What runs SQL: the pool, or one connection inside a transaction. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

export class Postgres implements Queryable {
  readonly pool: pg.Pool;
  /** host:port/database, for messages (no user, no password). */
  readonly where: string;
  private readonly logger: Logger;
  private down = false;
  /**
   * Steps begun so far, and how many had begun when the outage was declared: only a step begun after
   * that may declare it over. (A write that was waiting on a lock can still commit while the server shuts
   * down, after another step has already failed; counting it as recovery logged a second outage.)
   */
  private begun = 0;
  private downAt = 0;
  private closing: Promise<void> | undefined;

  constructor(url: string, opts: PostgresOptions = {}) {
    this.logger = opts.logger ?? silentLogger;
    this.where = describePostgresUrl(url);
    const statementTimeout = opts.statementTimeoutMs ?? 5000;
    this.pool = new pg.Pool({
      connectionString: url,
      max: opts.maxConnections ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 2000,
      statement_timeout: statementTimeout,
      // The server cancels a slow statement first; this catches a server (or network) that went silent.
      query_timeout: statementTimeout + 1000,
      // A client that vanished inside a transaction does not hold its locks for long.
      idle_in_transaction_session_timeout: Math.max(10_000, 2 * statementTimeout),
      keepAlive: true,
      idleTimeoutMillis: 30_000,
      application_name: 'svc',
    });
    // An idle connection the server closed (restart, failover) reports here; the pool has dropped it already.
    this.pool.on('error', (e: Error) => this.failed(e));
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    return this.guard(() => this.pool.query<R>(text, values));
  }

  /**
   * Runs `fn` inside BEGIN … COMMIT on one connection; rolls back when it throws. A connection that
   * failed is destroyed rather than returned to the pool. `statementTimeoutMs` replaces the pool's
   * statement timeout inside this transaction.
   */
  async transaction<T>(fn: (db: Queryable) => Promise<T>, opts: { statementTimeoutMs?: number } = {}): Promise<T> {
    return this.guard(async () => {
      const client = await this.pool.connect();
      // A connection lost while checked out reports here too; the failing query rejects with it.
      const onError = (): void => {};
      client.on('error', onError);
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        let db: Queryable = client;
        const timeout = opts.statementTimeoutMs;
        if (timeout !== undefined) {
          // For the rare long step (migrations): this transaction's statements may take longer.
          await client.query(`SET LOCAL statement_timeout = ${Math.floor(timeout)}`);
          // pg reads a per-query read timeout from the query's config (its types do not list it).
          const slow = (text: string, values?: unknown[]): pg.QueryConfig => ({ text, values, query_timeout: timeout + 1000 }) as pg.QueryConfig;
          db = { query: <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => client.query<R>(slow(text, values)) };
        }
        const result = await fn(db);
        await client.query('COMMIT');
        return result;
      } catch (e) {
        // A lost or stuck connection is closed (the server then rolls back) rather than waited on again;
        // after any other error it is rolled back and reused.
        if (isUnreachable(e) || !(await client.query('ROLLBACK').then(() => true, () => false))) broken = e as Error;
        throw e;
      } finally {
        client.removeListener('error', onError);
        client.release(broken);
      }
    });
  }

  /** Ends every connection (once; later calls wait for the same end). */
  close(): Promise<void> {
    return (this.closing ??= this.pool.end());
  }

  /** Runs one database step: an unreachable server becomes 503 backend_unavailable. */
  private async guard<T>(step: () => Promise<T>): Promise<T> {
    const n = ++this.begun;
    try {
      const result = await step();
      if (this.down && n > this.downAt) {
        this.down = false;
        this.logger.info({ database: this.where }, 'PostgreSQL reachable again');
      }
      return result;
    } catch (e) {
      if (!isUnreachable(e)) throw e;
      this.failed(e as Error);
      // The reason stays attached for a caller that reports it (the start-up check); the answer never shows it.
      throw Object.assign(databaseUnavailable(), { cause: e });
    }
  }

  private failed(e: Error): void {
    if (this.down) return;
    this.down = true;
    this.downAt = this.begun;
    const code = (e as { code?: unknown }).code;
    this.logger.warn({ database: this.where, reason: e.message, code: typeof code === 'string' ? code : undefined }, 'PostgreSQL unreachable: requests that need it get 503 until it is back');
  }
}

/** Opens the pool (connections are made on first use). */
export function openPostgres(url: string, opts: PostgresOptions = {}): Postgres {
  return new Postgres(url, opts);
}

export function isPostgresUrl(s: string): boolean {
  return /^postgres(ql)?:\/\//i.test(s);
}

/** host:port/database of a postgres:// URL, without user or password (for logs and messages). */
export function describePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    const host = u.hostname || new URLSearchParams(u.search).get('host') || 'localhost';
    return `${host}:${u.port || '5432'}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
  } catch {
    return 'PostgreSQL (unparsable URL)';
  }
}
