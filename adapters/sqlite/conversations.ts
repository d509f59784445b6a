/** Conversation memory on SQLite (table conversation_turns, migration 2). */
import type { ConversationStore, ConversationTurn } from '../../protocol/conversations.ts';
import type { Db } from './db.ts';

export class SqliteConversations implements ConversationStore {
  private readonly last;
  private readonly insert;
  private readonly prune;
  private readonly append;

  constructor(db: Db) {
    this.last = db.prepare<[number, string, number], ConversationTurn>(
      `SELECT role, content FROM (
         SELECT seq, role, content FROM conversation_turns WHERE key_id = ? AND conversation_id = ? ORDER BY seq DESC LIMIT ?
       ) ORDER BY seq`,
    );
    // seq continues from the conversation's last turn; the whole append is one transaction, so two
    // requests on one conversation cannot take the same numbers.
    this.insert = db.prepare(
      `INSERT INTO conversation_turns (key_id, conversation_id, seq, role, content, created_at)
       VALUES (?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM conversation_turns WHERE key_id = ? AND conversation_id = ?), ?, ?, ?)`,
    );
    this.prune = db.prepare(
      `DELETE FROM conversation_turns WHERE key_id = ? AND conversation_id = ? AND seq <=
         (SELECT MAX(seq) FROM conversation_turns WHERE key_id = ? AND conversation_id = ?) - ?`,
    );
    this.append = db.transaction((keyId: number, id: string, turns: readonly ConversationTurn[], now: number, keep: number) => {
      for (const t of turns) this.insert.run(keyId, id, keyId, id, t.role, t.content, now);
      this.prune.run(keyId, id, keyId, id, keep);
    });
  }

  conversationTurns(keyId: number, conversationId: string, limit: number): ConversationTurn[] {
    return this.last.all(keyId, conversationId, limit);
  }

  appendTurns(keyId: number, conversationId: string, turns: readonly ConversationTurn[], now: number, keep: number): void {
    this.append.immediate(keyId, conversationId, turns, now, keep);
  }
}
