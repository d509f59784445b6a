/**
 * A specialist's guardrail, with the request's extension fields, as an output plan. The built-in
 * grammars are the specialist itself, not a plan feature; only a caller's own JSON schema (`schema` on
 * extract) counts as the jsonSchema feature.
 */
import type { ChatMessage } from '../../engine/chat/index.ts';
import { invalidRequest } from '../errors.ts';
import { freeText, type OutputPlan } from '../output/plan.ts';
import { OPTION_PARAMS, type OutputOptions } from '../requests/extensions.ts';
import type { Guardrail, Specialist } from '../specialists/schema.ts';
import { closeFence, FENCE, FENCED_CODE_GRAMMAR } from './ebnf.ts';
import { groundedPlan } from './grounded.ts';
import { labelsFromSystem, labelsPlan } from './labels.ts';
import { summaryPlan } from './summary.ts';

/** Which extension fields each guardrail takes. */
const ACCEPTS: Record<Guardrail['kind'], readonly (keyof OutputOptions)[]> = {
  none: [],
  labels: ['labels'],
  summary: ['format', 'maxBullets', 'maxWords'],
  json: ['schema'],
  grounded: ['context'],
  'fenced-code': [],
};

const TAKEN_BY: Record<keyof OutputOptions, string> = {
  labels: 'classify',
  format: 'summarise',
  maxBullets: 'summarise',
  maxWords: 'summarise',
  schema: 'extract',
  context: 'qa',
};

/** 400 for an extension field the specialist cannot use: it is never silently ignored. */
export function checkOptions(specialist: Specialist, opts: OutputOptions): void {
  const accepted = ACCEPTS[specialist.guardrail.kind];
  for (const key of Object.keys(opts) as (keyof OutputOptions)[]) {
    if (accepted.includes(key)) continue;
    const param = OPTION_PARAMS[key];
    throw invalidRequest(
      `'${param}' does not apply to the '${specialist.name}' specialist (its output guardrail is '${specialist.guardrail.kind}'); it is for specialists like '${TAKEN_BY[key]}'.`,
      param,
    );
  }
}

/** `messages` are the caller's (labels and the qa context may come from them). */
export function guardrailPlan(specialist: Specialist, opts: OutputOptions, messages: readonly ChatMessage[]): OutputPlan {
  checkOptions(specialist, opts);
  const g = specialist.guardrail;
  switch (g.kind) {
    case 'none':
      return freeText();
    case 'labels': {
      if (opts.labels) return labelsPlan({ labels: opts.labels, param: 'labels' }, false);
      const fromSystem = labelsFromSystem(messages);
      return fromSystem ? labelsPlan(fromSystem, true) : labelsPlan({ labels: g.labels, param: null }, false);
    }
    case 'summary':
      return summaryPlan(g, opts);
    case 'json': {
      const schema = opts.schema ?? g.schema;
      return {
        instructions: schema ? [`The JSON object must match this JSON Schema: ${JSON.stringify(schema)}`] : [],
        grammar: () => (schema ? { type: 'json_schema', schema, strict: true } : { type: 'json_object' }),
        blame: () => (opts.schema ? 'schema' : null),
        source: opts.schema ? 'schema' : null,
        formatStop: false,
        confidence: false,
        features: opts.schema ? [{ feature: 'jsonSchema', param: 'schema' }] : [],
      };
    }
    case 'grounded':
      return groundedPlan(g, opts.context, messages);
    case 'fenced-code':
      return {
        instructions: [`Start your answer with the code in a fenced block: ${FENCE} and the language on the first line, the code, then ${FENCE} on a line of its own. Any explanation goes after the block.`],
        grammar: () => ({ type: 'ebnf', grammar: FENCED_CODE_GRAMMAR }),
        blame: () => null,
        source: null,
        formatStop: false,
        confidence: false,
        closing: { complete: closeFence, longest: `\n${FENCE}` },
        features: [],
      };
  }
}
