/**
 * Memory for `/v1/infer` on specialists with `"memory": true` (chat): the turns of a conversation, kept
 * per API key in the store under the caller's `conversation_id`, durable across restarts. Every turn is
 * stored (up to MAX_STORED_TURNS, oldest dropped first); what reaches the model is trimmed from the
 * oldest turns so the prompt leaves room for the answer (fitHistory).
 */

export const MAX_STORED_TURNS = 200;

export interface ConversationTurn {
  role: 'user' | 'assistant';
  content: string;
}

export interface ConversationStore {
  /** The conversation's last `limit` turns, oldest first (none for an unknown id). */
  conversationTurns(keyId: number, conversationId: string, limit: number): ConversationTurn[] | Promise<ConversationTurn[]>;
  /** Appends turns in one transaction, dropping the oldest beyond `keep`. */
  appendTurns(keyId: number, conversationId: string, turns: readonly ConversationTurn[], now: number, keep: number): void | Promise<void>;
}

/**
 * How many of the oldest turns to leave out so that `promptTokens(dropped)` plus `reserve` fits in
 * `context`: the fewest that fit, dropping whole user/assistant exchanges (so history still starts with
 * a user turn). When even no history does not fit, all of it is dropped and the usual context rules apply.
 */
export function turnsToDrop(turns: readonly ConversationTurn[], promptTokens: (dropped: number) => number, reserve: number, context: number): number {
  const fits = (dropped: number) => promptTokens(dropped) + reserve <= context;
  // Exchange boundaries: user turns (a leading assistant turn only happens after trimming in storage).
  const cuts = [0];
  for (let i = 1; i < turns.length; i++) if (turns[i].role === 'user') cuts.push(i);
  cuts.push(turns.length);
  // Fewer turns, fewer tokens: binary search the first cut that fits.
  let lo = 0;
  let hi = cuts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fits(cuts[mid])) hi = mid;
    else lo = mid + 1;
  }
  return cuts[lo];
}
