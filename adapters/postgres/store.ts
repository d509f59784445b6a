/**
 * The service's Store on PostgreSQL, shared by replicas: key lookup, per-period usage, counting one
 * request exactly once, conversations. Every method answers with a promise; when the server cannot be
 * reached it rejects with 503 backend_unavailable (pool.ts).
 */
import type { ConversationTurn } from '../../protocol/conversations.ts';
import type { AccountRecord, KeyRecord, Store, UsageEntry, UsageRow } from '../../protocol/store.ts';
import { PostgresConversations } from './conversations.ts';
import { PostgresFineTuning } from './fine-tuning.ts';
import type { Postgres } from './pool.ts';
import { ACCOUNT_COLUMNS, KEY_COLUMNS, num, toAccount, toKey, type KeyAccountRow } from './rows.ts';

/**
 * One statement, so one transaction: the event is inserted unless its request id is already there, and
 * only an inserted event adds to the aggregate (a retried write of the same request counts once). The
 * request and its tokens land together, so by_specialist always adds up to requests_used.
 */
const RECORD_ONCE = `
  WITH counted AS (
    INSERT INTO usage_events (request_id, key_id, period_start, specialist, prompt_tokens, completion_tokens, recorded_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (request_id) DO NOTHING
    RETURNING key_id, period_start, specialist, prompt_tokens, completion_tokens
  )
  INSERT INTO usage (key_id, period_start, specialist, requests, prompt_tokens, completion_tokens)
  SELECT key_id, period_start, specialist, 1, prompt_tokens, completion_tokens FROM counted
  ON CONFLICT (key_id, period_start, specialist) DO UPDATE SET
    requests = usage.requests + 1,
    prompt_tokens = usage.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = usage.completion_tokens + excluded.completion_tokens`;

/** An entry without a request id (written outside a request) is simply added. */
const RECORD = `
  INSERT INTO usage (key_id, period_start, specialist, requests, prompt_tokens, completion_tokens) VALUES ($1, $2, $3, 1, $4, $5)
  ON CONFLICT (key_id, period_start, specialist) DO UPDATE SET
    requests = usage.requests + 1,
    prompt_tokens = usage.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = usage.completion_tokens + excluded.completion_tokens`;

export class PostgresStore implements Store {
  private readonly conversations: PostgresConversations;
  readonly fineTuning: PostgresFineTuning;

  constructor(readonly db: Postgres) {
    this.conversations = new PostgresConversations(db);
    this.fineTuning = new PostgresFineTuning(db);
  }

  async findKey(prefix: string): Promise<{ key: KeyRecord; account: AccountRecord } | undefined> {
    const { rows } = await this.db.query<KeyAccountRow>(`SELECT ${KEY_COLUMNS}, ${ACCOUNT_COLUMNS} FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.prefix = $1`, [prefix]);
    return rows[0] ? { key: toKey(rows[0]), account: toAccount(rows[0]) } : undefined;
  }

  async requestsInPeriod(keyId: number, periodStart: number): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>('SELECT coalesce(sum(requests), 0)::bigint AS n FROM usage WHERE key_id = $1 AND period_start = $2', [keyId, periodStart]);
    return num(rows[0].n);
  }

  async usageInPeriod(keyId: number, periodStart: number): Promise<UsageRow[]> {
    // Byte order, as SQLite sorts, whatever the database's collation.
    const { rows } = await this.db.query<{ specialist: string; requests: string; prompt_tokens: string; completion_tokens: string }>(
      'SELECT specialist, requests, prompt_tokens, completion_tokens FROM usage WHERE key_id = $1 AND period_start = $2 ORDER BY specialist COLLATE "C"',
      [keyId, periodStart],
    );
    return rows.map((r) => ({ specialist: r.specialist, requests: num(r.requests), promptTokens: num(r.prompt_tokens), completionTokens: num(r.completion_tokens) }));
  }

  async recordUsage(e: UsageEntry): Promise<void> {
    if (e.requestId === undefined) await this.db.query(RECORD, [e.keyId, e.periodStart, e.specialist, e.promptTokens, e.completionTokens]);
    else await this.db.query(RECORD_ONCE, [e.requestId, e.keyId, e.periodStart, e.specialist, e.promptTokens, e.completionTokens, Date.now()]);
  }

  conversationTurns(keyId: number, conversationId: string, limit: number): Promise<ConversationTurn[]> {
    return this.conversations.conversationTurns(keyId, conversationId, limit);
  }

  appendTurns(keyId: number, conversationId: string, turns: readonly ConversationTurn[], now: number, keep: number): Promise<void> {
    return this.conversations.appendTurns(keyId, conversationId, turns, now, keep);
  }
}
