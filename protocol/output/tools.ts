/**
 * `tools` / `tool_choice` / `parallel_tool_calls`, and the legacy `functions` / `function_call`, as an
 * output plan. The tool-call grammar (engine/grammar) guarantees every call names one of the tools and
 * its arguments validate against that function's parameters; `auto` lets the model answer in text
 * instead. Schemas compile strictly, as for response_format.
 */
import type { ToolChoice } from '../../engine/grammar/index.ts';
import type { OutputPlan } from './plan.ts';

export interface FunctionDef {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

export interface ToolsRequest {
  functions: FunctionDef[];
  choice: ToolChoice | 'none';
  /** Several calls in one answer (`parallel_tool_calls`, default true; always false for legacy functions). */
  parallel: boolean;
  /** Sent as `functions`: answered as `message.function_call`. */
  legacy: boolean;
}

/** The plan for a request whose tool choice is not `none` (with `none` the tools play no part). */
export function toolsPlan(t: ToolsRequest & { choice: ToolChoice }): OutputPlan {
  const render = t.functions.map((f) => ({ type: 'function' as const, function: f }));
  return {
    instructions: [],
    grammar: () => ({ type: 'tools', tools: t.functions.map((f) => ({ ...f, strict: true })), choice: t.choice, parallel: t.parallel }),
    blame: (p) => (t.legacy ? legacyParam(p) : p),
    source: t.legacy ? 'functions' : 'tools',
    // Free text under `auto` may run on into a next turn; calls end where the grammar says.
    formatStop: t.choice === 'auto',
    confidence: false,
    toolCalls: { render, legacy: t.legacy },
    features: [],
  };
}

/** The grammar compiler names the tools form; a legacy request sent `functions`. */
function legacyParam(p: string): string {
  if (p === 'tool_choice') return 'function_call';
  return p.replace(/^tools(\[\d+\])\.function\./, 'functions$1.').replace(/^tools\b/, 'functions');
}
