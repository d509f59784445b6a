/**
 * The wire format of tool calls for models without a chat template of their own (Hermes / Qwen 2.5
 * style, which many instruction-tuned models already know):
 *
 *     <tool_call>
 *     {"name": "get_weather", "arguments": {"city": "Paris"}}
 *     </tool_call>
 *
 * Several calls follow each other separated by "\n". Under the grammar, `arguments` is always an object
 * valid under that function's `parameters` schema, on one line with ", " and ": " separators. With
 * tool_choice `auto`, free text may come before a call; the first `<tool_call>` switches to the
 * constrained format, and text before it is the message content.
 */

export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';

/** What comes before a function's arguments object. */
export function toolCallPrefix(name: string): string {
  return `${TOOL_CALL_OPEN}\n{"name": ${JSON.stringify(name)}, "arguments": `;
}

/** What closes a call after the arguments object. */
export const TOOL_CALL_SUFFIX = `}\n${TOOL_CALL_CLOSE}`;

export const TOOL_CALL_SEPARATOR = '\n';

/** One call as text in the wire format (for rendering earlier assistant turns into a prompt). */
export function formatToolCall(name: string, argumentsJson: string): string {
  let args: unknown;
  try {
    args = JSON.parse(argumentsJson);
  } catch {
    args = argumentsJson; // not JSON: shown as the string it is
  }
  return `${toolCallPrefix(name)}${jsonOneLine(args)}${TOOL_CALL_SUFFIX}`;
}

/** JSON on one line with ", " and ": " separators: the layout the grammar generates. */
export function jsonOneLine(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(jsonOneLine).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${jsonOneLine(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
