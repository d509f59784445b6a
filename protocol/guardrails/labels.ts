/**
 * classify: the answer is exactly one label of the set, and comes with a confidence. The set is, first
 * found: the request's `labels`, a `Labels: a, b, c` line in the caller's system messages, the
 * specialist file's labels.
 */
import { contentText, type ChatMessage } from '../../engine/chat/index.ts';
import { vocabularyCoverage } from '../../engine/grammar/index.ts';
import { invalidRequest } from '../errors.ts';
import type { OutputPlan } from '../output/plan.ts';
import { issuesToError } from '../requests/issues.ts';
import { labelSetSchema } from '../specialists/schema.ts';
import { labelsGrammar } from './ebnf.ts';

/** A line of its own in a system (or developer) message: `Labels:` (any case), then labels separated by commas. */
const LABELS_LINE = /^[ \t]*labels[ \t]*:(.*)$/im;

export interface LabelSet {
  labels: string[];
  /** The API parameter that set them (null: the specialist file's). */
  param: string | null;
}

/** The labels of the first `Labels:` line in the caller's system messages, trimmed, empty items dropped. */
export function labelsFromSystem(messages: readonly ChatMessage[]): LabelSet | undefined {
  for (const [i, m] of messages.entries()) {
    if (m.role !== 'system' && m.role !== 'developer') continue;
    const line = LABELS_LINE.exec(contentText(m.content, `messages[${i}]`));
    if (!line) continue;
    const labels = [...new Set(line[1].split(',').map((l) => l.trim()).filter((l) => l.length > 0))];
    const param = `messages[${i}].content`;
    const checked = labelSetSchema.safeParse(labels);
    if (!checked.success) {
      const e = issuesToError(checked.error.issues, labels);
      throw invalidRequest(`The 'Labels:' line of ${param} is not a usable label set: ${e.message.replace(/^Invalid '[^']*': /, '')}`, param);
    }
    return { labels, param };
  }
  return undefined;
}

export function labelsPlan(set: LabelSet, fromSystem: boolean): OutputPlan {
  return {
    // Labels from a system message are in the prompt already.
    instructions: fromSystem ? [] : [`Labels: ${set.labels.join(', ')}`],
    grammar(tokenizer) {
      const cov = vocabularyCoverage(tokenizer);
      const bad = set.labels.find((l) => [...l].some((ch) => !cov.has(ch)));
      if (bad !== undefined) {
        const where = set.param ?? 'the specialist file';
        throw invalidRequest(`The label ${JSON.stringify(bad)} (${where}) has characters this model's vocabulary cannot write; use other labels.`, set.param);
      }
      return { type: 'ebnf', grammar: labelsGrammar(set.labels) };
    },
    blame: () => set.param,
    source: set.param,
    formatStop: false,
    // Only for a whole label: the probability of "pos" cut off from "positive" is no label's confidence.
    confidence: (answer) => set.labels.includes(answer),
    features: [],
  };
}
