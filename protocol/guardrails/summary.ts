/**
 * summarise: `- ` bullet lines or one paragraph, with at most `max_words` words in all. Bullets share
 * the words: each has at most floor(max_words / bullets), so the total never exceeds max_words.
 */
import { invalidRequest } from '../errors.ts';
import type { OutputPlan } from '../output/plan.ts';
import type { OutputOptions } from '../requests/extensions.ts';
import type { Guardrail } from '../specialists/schema.ts';
import { bulletsGrammar, proseGrammar } from './ebnf.ts';

type SummaryGuardrail = Extract<Guardrail, { kind: 'summary' }>;

export function summaryPlan(g: SummaryGuardrail, opts: OutputOptions): OutputPlan {
  const format = opts.format ?? g.format;
  const maxWords = opts.maxWords ?? g.maxWords;
  if (format === 'prose' && opts.maxBullets !== undefined) throw invalidRequest("'max_bullets' applies only to format 'bullets'.", 'max_bullets');
  const base = { blame: () => null, source: null, formatStop: false, confidence: false, features: [] };
  if (format === 'prose') {
    return { ...base, instructions: [`Answer with one paragraph of at most ${maxWords} words.`], grammar: () => ({ type: 'ebnf', grammar: proseGrammar(maxWords) }) };
  }
  // Fewer words than bullets: one word per bullet, as many bullets as words.
  const bullets = Math.min(opts.maxBullets ?? g.maxBullets, maxWords);
  const perBullet = Math.floor(maxWords / bullets);
  return {
    ...base,
    instructions: [`Answer with at most ${bullets} bullet points, each on its own line starting with "- ", and at most ${maxWords} words in all.`],
    grammar: () => ({ type: 'ebnf', grammar: bulletsGrammar(bullets, perBullet) }),
  };
}
