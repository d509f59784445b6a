/**
 * Which output plan a chat completion runs: the caller's `tools` (unless tool_choice is none) or
 * `response_format` replace the specialist's guardrail for that request; otherwise the guardrail, shaped
 * by the extension fields. Grammars do not combine, so tools with a JSON response_format is a 400, and
 * so is an extension field beside either (it would have nothing to shape).
 */
import { checkOptions, guardrailPlan } from '../guardrails/plan.ts';
import { invalidRequest } from '../errors.ts';
import { OPTION_PARAMS, type OutputOptions } from '../requests/extensions.ts';
import type { ChatRequest } from '../requests/chat.ts';
import type { Specialist } from '../specialists/schema.ts';
import type { OutputPlan } from './plan.ts';
import { responseFormatPlan } from './response-format.ts';
import { toolsPlan } from './tools.ts';

export function chatOutputPlan(specialist: Specialist, req: ChatRequest): OutputPlan {
  const t = req.tools;
  const tools = t && t.choice !== 'none' ? toolsPlan({ ...t, choice: t.choice }) : undefined;
  const format = responseFormatPlan(req.responseFormat);
  if (tools && format) {
    throw invalidRequest(`'response_format' of type '${req.responseFormat.type}' cannot be combined with ${t!.legacy ? 'functions' : 'tools'}: both would constrain the same output. Send tool_choice 'none', or one of them.`, 'response_format');
  }
  const replacing = tools ?? format;
  if (!replacing) return guardrailPlan(specialist, req.output, req.messages);
  checkOptions(specialist, req.output);
  const [extra] = Object.keys(req.output) as (keyof OutputOptions)[];
  if (extra) {
    const by = tools ? (t!.legacy ? 'functions' : 'tools') : 'response_format';
    throw invalidRequest(`'${OPTION_PARAMS[extra]}' cannot be combined with '${by}', which replaces the specialist's own output form.`, OPTION_PARAMS[extra]);
  }
  return replacing;
}
