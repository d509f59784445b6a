/**
 * Conversation memory on PostgreSQL (table conversation_turns, migration 2). Appends to one conversation
 * are serialised by a transaction-scoped advisory lock on (key, conversation), so two replicas answering
 * the same conversation never take the same turn numbers; other conversations do not wait.
 */
import type { ConversationStore, ConversationTurn } from '../../protocol/conversations.ts';
import type { Postgres } from './pool.ts';

export class PostgresConversations implements ConversationStore {
  constructor(private readonly db: Postgres) {}

  async conversationTurns(keyId: number, conversationId: string, limit: number): Promise<ConversationTurn[]> {
    const { rows } = await this.db.query<ConversationTurn>(
      `SELECT role, content FROM (
         SELECT seq, role, content FROM conversation_turns WHERE key_id = $1 AND conversation_id = $2 ORDER BY seq DESC LIMIT $3
       ) last ORDER BY seq`,
      [keyId, conversationId, limit],
    );
    return rows.map((r) => ({ role: r.role, content: r.content }));
  }

  async appendTurns(keyId: number, conversationId: string, turns: readonly ConversationTurn[], now: number, keep: number): Promise<void> {
    await this.db.transaction(async (q) => {
      // The two-key advisory lock space is apart from the one-key space the migrations lock in.
      await q.query('SELECT pg_advisory_xact_lock(hashtext($1::text), hashtext($2))', [keyId, conversationId]);
      // seq continues from the conversation's last turn, in the order given.
      await q.query(
        `INSERT INTO conversation_turns (key_id, conversation_id, seq, role, content, created_at)
         SELECT $1, $2, last.seq + t.n, t.role, t.content, $5
         FROM (SELECT coalesce(max(seq), 0) AS seq FROM conversation_turns WHERE key_id = $1 AND conversation_id = $2) last,
              unnest($3::text[], $4::text[]) WITH ORDINALITY AS t(role, content, n)`,
        [keyId, conversationId, turns.map((t) => t.role), turns.map((t) => t.content), now],
      );
      await q.query(
        `DELETE FROM conversation_turns WHERE key_id = $1 AND conversation_id = $2 AND seq <=
           (SELECT max(seq) FROM conversation_turns WHERE key_id = $1 AND conversation_id = $2) - $3`,
        [keyId, conversationId, keep],
      );
    });
  }
}
