/** Chat messages as the OpenAI API has them, after the protocol layer checked their shape. */

export interface ChatToolCall {
  id?: string;
  type?: 'function';
  function: { name: string; /** JSON text, as OpenAI sends it. */ arguments: string };
}

/** Text, or OpenAI content parts of which only text parts are supported. */
export type ChatContent = string | readonly { type: 'text'; text: string }[];

export type ChatMessage =
  | { role: 'system' | 'developer'; content: ChatContent; name?: string }
  | { role: 'user'; content: ChatContent; name?: string }
  | { role: 'assistant'; content?: ChatContent | null; tool_calls?: readonly ChatToolCall[]; name?: string }
  | { role: 'tool'; content: ChatContent; tool_call_id?: string; name?: string };

/** A tool as the chat template sees it: OpenAI's `{type: "function", function: {...}}`. */
export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown };
}

export interface RenderedChat {
  /** The prompt text. */
  text: string;
  /**
   * The prompt as token ids, ready for `generate({ tokens })`: BOS added unless the template already
   * wrote it, and with a template, control-token text such as `<|im_start|>` read as those tokens.
   */
  tokens: number[];
  /** Stop strings the format needs to end the assistant's turn (added to the caller's). */
  stop: string[];
  /** Which format rendered it. */
  format: 'template' | 'fallback';
}
