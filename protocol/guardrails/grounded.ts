/**
 * qa: grounded by construction. The answer is one or more sentences quoted verbatim from the context,
 * or exactly the specialist's not-found answer; the grammar allows nothing else, so an answer can only
 * say what the context says. The context is the request's `context`, else the caller's own system and
 * user messages (the whole prompt on /v1/infer).
 */
import { contentText, type ChatMessage } from '../../engine/chat/index.ts';
import { vocabularyCoverage } from '../../engine/grammar/index.ts';
import type { OutputPlan } from '../output/plan.ts';
import type { Guardrail } from '../specialists/schema.ts';
import { groundedGrammar } from './ebnf.ts';

type GroundedGuardrail = Extract<Guardrail, { kind: 'grounded' }>;

/** More sentences than this are not offered (the grammar grows with them); the first ones are kept. */
export const MAX_CONTEXT_SENTENCES = 2000;

/** Sentences: text up to `.`, `!` or `?` followed by whitespace, or a line; trimmed, each once. */
export function contextSentences(context: string): string[] {
  const out = new Set<string>();
  for (const line of context.split(/\r?\n/)) {
    for (const s of line.split(/(?<=[.!?]["')\]]?)\s+/)) {
      const t = s.trim();
      if (t.length > 0) out.add(t);
      if (out.size === MAX_CONTEXT_SENTENCES) return [...out];
    }
  }
  return [...out];
}

export function groundedPlan(g: GroundedGuardrail, context: string | undefined, messages: readonly ChatMessage[]): OutputPlan {
  const source =
    context ??
    messages
      .flatMap((m, i) => (m.role === 'system' || m.role === 'developer' || m.role === 'user' ? [contentText(m.content, `messages[${i}]`)] : []))
      .join('\n');
  return {
    instructions: [...(context !== undefined ? [`Context:\n${context}`] : []), `Answer with sentences quoted from the context. If the context does not contain the answer, answer exactly: ${g.notFoundAnswer}`],
    grammar(tokenizer) {
      // A sentence this vocabulary cannot spell would be a dead end half-way: it is not offered.
      const cov = vocabularyCoverage(tokenizer);
      const spans = contextSentences(source).filter((s) => [...s].every((ch) => cov.has(ch)));
      return { type: 'ebnf', grammar: groundedGrammar(g.notFoundAnswer, spans, g.maxSentences) };
    },
    blame: () => null,
    source: null,
    formatStop: false,
    confidence: false,
    features: [],
  };
}
