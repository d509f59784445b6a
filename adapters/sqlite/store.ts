/** The service's Store on SQLite: key lookup, per-period usage, counting one request atomically, conversations. */
import type { ConversationTurn } from '../../protocol/conversations.ts';
import type { Store, UsageEntry, UsageRow } from '../../protocol/store.ts';
import { SqliteConversations } from './conversations.ts';
import { SqliteFineTuning } from './fine-tuning.ts';
import type { Db } from './db.ts';
import { ACCOUNT_COLUMNS, KEY_COLUMNS, toAccount, toKey, type KeyAccountRow } from './rows.ts';

export class SqliteStore implements Store {
  private readonly byPrefix;
  private readonly requests;
  private readonly usage;
  private readonly record;
  private readonly conversations: SqliteConversations;
  readonly fineTuning: SqliteFineTuning;

  constructor(readonly db: Db) {
    this.conversations = new SqliteConversations(db);
    this.fineTuning = new SqliteFineTuning(db);
    this.byPrefix = db.prepare<[string], KeyAccountRow>(`SELECT ${KEY_COLUMNS}, ${ACCOUNT_COLUMNS} FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.prefix = ?`);
    this.requests = db.prepare<[number, number], { n: number }>('SELECT COALESCE(SUM(requests), 0) AS n FROM usage WHERE key_id = ? AND period_start = ?');
    this.usage = db.prepare<[number, number], { specialist: string; requests: number; prompt_tokens: number; completion_tokens: number }>(
      'SELECT specialist, requests, prompt_tokens, completion_tokens FROM usage WHERE key_id = ? AND period_start = ? ORDER BY specialist',
    );
    // One statement: the request and its tokens land together, and totals are sums of these rows,
    // so by_specialist always adds up to requests_used.
    this.record = db.prepare(
      `INSERT INTO usage (key_id, period_start, specialist, requests, prompt_tokens, completion_tokens) VALUES (?, ?, ?, 1, ?, ?)
       ON CONFLICT (key_id, period_start, specialist) DO UPDATE SET
         requests = requests + 1,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens`,
    );
  }

  findKey(prefix: string) {
    const row = this.byPrefix.get(prefix);
    return row ? { key: toKey(row), account: toAccount(row) } : undefined;
  }

  requestsInPeriod(keyId: number, periodStart: number): number {
    return this.requests.get(keyId, periodStart)!.n;
  }

  usageInPeriod(keyId: number, periodStart: number): UsageRow[] {
    return this.usage.all(keyId, periodStart).map((r) => ({ specialist: r.specialist, requests: r.requests, promptTokens: r.prompt_tokens, completionTokens: r.completion_tokens }));
  }

  recordUsage(e: UsageEntry): void {
    this.record.run(e.keyId, e.periodStart, e.specialist, e.promptTokens, e.completionTokens);
  }

  conversationTurns(keyId: number, conversationId: string, limit: number): ConversationTurn[] {
    return this.conversations.conversationTurns(keyId, conversationId, limit);
  }

  appendTurns(keyId: number, conversationId: string, turns: readonly ConversationTurn[], now: number, keep: number): void {
    this.conversations.appendTurns(keyId, conversationId, turns, now, keep);
  }
}
