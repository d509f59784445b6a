/** What a caller can constrain generation to. */

/** One function the model may call (OpenAI's `tools[i].function`). */
export interface ToolFunction {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object; absent means no arguments (`{}`). */
  parameters?: unknown;
  /** Refuse schema keywords the grammar cannot enforce (as for json_schema). */
  strict?: boolean;
}

/** `auto`: a plain answer or calls; `required`: at least one call; `{ name }`: exactly one call of it. */
export type ToolChoice = 'auto' | 'required' | { name: string };

export type GrammarSpec =
  /** Any JSON object (OpenAI `response_format: {type: "json_object"}`). */
  | { type: 'json_object' }
  /** A value valid under the schema (`response_format: {type: "json_schema"}`); `strict` refuses keywords the grammar cannot enforce. */
  | { type: 'json_schema'; schema: unknown; strict?: boolean }
  /** EBNF / llama.cpp GBNF text; `root` names the start rule (default "root"). */
  | { type: 'ebnf'; grammar: string; root?: string }
  /** Tool calls in the wire format of tool-format.ts. `parallel: false` allows at most one call. */
  | { type: 'tools'; tools: readonly ToolFunction[]; choice: ToolChoice; parallel?: boolean };
