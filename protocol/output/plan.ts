/**
 * What a request's output must look like and how it is produced: the grammar that guarantees the form,
 * what the prompt says about it, and how the generated text becomes the answer. Made by a specialist's
 * guardrail (guardrails/), by `response_format` (response-format.ts) or by `tools` (tools.ts).
 */
import type { ChatTool } from '../../engine/chat/index.ts';
import type { GrammarSpec } from '../../engine/grammar/index.ts';
import type { Tokenizer } from '../../engine/tokenizer/types.ts';
import type { Feature } from '../plans.ts';

export interface ToolPlan {
  /** Shown to the model (through the chat template or the fallback's tools block). */
  render: ChatTool[];
  /** Answer in the legacy `functions` form (`message.function_call`, one call). */
  legacy: boolean;
}

export interface OutputPlan {
  /** Lines added to the specialist's system prompt. */
  instructions: string[];
  /** The grammar, built for this model's vocabulary (may throw a 400); absent for free text. */
  grammar?(tokenizer: Tokenizer): GrammarSpec;
  /**
   * The API parameter a grammar error is the caller's fault under (the grammar compiler names its own
   * spec's parts: `schema`, `tools[0].function.parameters`, `grammar`); null where the grammar is ours.
   */
  blame(grammarParam: string): string | null;
  /** The API parameter that chose this output form (`response_format`, `tools`, `labels`...); null for a specialist's own. */
  source: string | null;
  /** Keep the chat format's stop strings: only for free text, which could run on into a next turn. */
  formatStop: boolean;
  /**
   * Report `confidence` (the probability the model gave the tokens of its answer) for this answer; an
   * answer cut off before it was whole (max_tokens, a stop string) has none.
   */
  confidence: boolean | ((answer: string) => boolean);
  /**
   * For free-text grammars (fenced code): what completes output cut off by something other than the
   * budget (the engine closes blocks within max_tokens itself), and the longest such text, whose tokens
   * are kept out of the budget so the completed answer still fits.
   */
  closing?: { complete(text: string): string; longest: string };
  /** Calls to read out of the output (tools with a grammar, i.e. tool_choice other than none). */
  toolCalls?: ToolPlan;
  /** Plan features this output uses. */
  features: { feature: Feature; param: string }[];
}

/** Whether `answer` comes with a confidence under this plan. */
export function reportsConfidence(plan: OutputPlan, answer: string): boolean {
  return typeof plan.confidence === 'function' ? plan.confidence(answer) : plan.confidence;
}

/** Free text: no grammar, the chat format's stop strings. */
export function freeText(): OutputPlan {
  return { instructions: [], blame: () => null, source: null, formatStop: true, confidence: false, features: [] };
}
