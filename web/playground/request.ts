/**
 * The chat completion the settings describe: the conversation so far, the specialist as the model, the
 * sampling fields, and the specialist's own inputs (labels, context passage, JSON schema, tools) only
 * where they apply, since the API refuses a field a specialist cannot use.
 */

export interface Turn {
  role: 'user' | 'assistant';
  content: string;
}

export interface Settings {
  specialist: string;
  temperature: number;
  maxTokens: number;
  stream: boolean;
  labels: string;
  context: string;
  schema: string;
  tools: string;
}

export function chatRequest(s: Settings, turns: readonly Turn[]): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: `svc-${s.specialist}`,
    messages: turns.map((t) => ({ role: t.role, content: t.content })),
    temperature: s.temperature,
    max_tokens: s.maxTokens,
  };
  if (s.stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  if (s.specialist === 'classify' && s.labels.trim()) body.labels = s.labels.split(',').map((l) => l.trim()).filter(Boolean);
  if (s.specialist === 'qa' && s.context.trim()) body.context = s.context;
  if (s.specialist === 'extract' && s.schema.trim()) body.response_format = { type: 'json_schema', json_schema: { name: 'answer', schema: parseJson(s.schema, 'JSON schema') } };
  if ((s.specialist === 'chat' || s.specialist === 'code') && s.tools.trim()) body.tools = parseJson(s.tools, 'tools');
  return body;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`The ${what} is not valid JSON: ${(e as Error).message}`);
  }
}
