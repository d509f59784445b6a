/** Generated text in the tool-call wire format (tool-format.ts) back into calls and content. */
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from './tool-format.ts';

export interface ParsedToolCall {
  name: string;
  /** The arguments object as a JSON string (OpenAI's `function.arguments`). */
  arguments: string;
}

export interface ParsedToolOutput {
  /** Text outside the calls, trimmed; null when there is none (OpenAI's `content: null`). */
  content: string | null;
  calls: ParsedToolCall[];
  /**
   * A call that started but did not finish (generation hit its token limit inside it), or a block that is
   * not a valid call. The grammar makes the second impossible; the first needs finish_reason "length".
   */
  incomplete?: string;
  /** Why a block was not a valid call, when there was one. */
  error?: string;
}

/**
 * Split text into content and calls. Every `<tool_call>` ... `</tool_call>` block must hold
 * `{"name": string, "arguments": object}`; `knownNames`, if given, must contain the name.
 */
export function parseToolCalls(text: string, knownNames?: readonly string[]): ParsedToolOutput {
  const calls: ParsedToolCall[] = [];
  const content: string[] = [];
  let at = 0;
  for (;;) {
    const open = text.indexOf(TOOL_CALL_OPEN, at);
    if (open < 0) {
      content.push(text.slice(at));
      break;
    }
    content.push(text.slice(at, open));
    const bodyStart = open + TOOL_CALL_OPEN.length;
    const close = text.indexOf(TOOL_CALL_CLOSE, bodyStart);
    if (close < 0) return finish(content, calls, { incomplete: text.slice(open), error: 'a tool call was cut off before </tool_call>' });
    const body = text.slice(bodyStart, close).trim();
    const call = readCall(body, knownNames);
    if (typeof call === 'string') return finish(content, calls, { incomplete: text.slice(open, close + TOOL_CALL_CLOSE.length), error: call });
    calls.push(call);
    at = close + TOOL_CALL_CLOSE.length;
  }
  return finish(content, calls, {});
}

function finish(content: string[], calls: ParsedToolCall[], extra: Pick<ParsedToolOutput, 'incomplete' | 'error'>): ParsedToolOutput {
  const text = content.join('').trim();
  return { content: text.length > 0 ? text : null, calls, ...extra };
}

/** The call in one block, or why it is not one. */
function readCall(body: string, knownNames?: readonly string[]): ParsedToolCall | string {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (e) {
    return `a tool call is not valid JSON (${(e as Error).message}): ${body.slice(0, 200)}`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'a tool call must be a JSON object';
  const { name, arguments: args } = value as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') return 'a tool call has no "name" string';
  if (knownNames && !knownNames.includes(name)) return `a tool call names "${name}", which is not among the tools`;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return `the call of "${name}" has no "arguments" object`;
  return { name, arguments: JSON.stringify(args) };
}
