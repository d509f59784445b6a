/**
 * The subset of the provider's Responses API request this service serves, translated into a chat
 * completion request (the one generation path): `input` as a string or message / function_call /
 * function_call_output items, `instructions`, `max_output_tokens`, `temperature`, `top_p`, `text.format`,
 * function `tools`, `tool_choice`, `parallel_tool_calls`, `stream`. Stateless: `store: true` and
 * `previous_response_id` are refused with a 400 that says so.
 */
import { z } from 'zod';
import { invalidRequest } from '../errors.ts';

const text = z.string().max(10_000_000);
const contentPart = z.object({ type: z.enum(['input_text', 'output_text', 'text']), text }).passthrough();
const messageItem = z.object({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'system', 'developer', 'assistant']),
  content: z.union([text, z.array(contentPart).max(1000)]),
  id: z.string().optional(),
  status: z.string().optional(),
});
const functionCallItem = z.object({ type: z.literal('function_call'), call_id: z.string().min(1).max(200), name: z.string().min(1).max(200), arguments: text, id: z.string().optional(), status: z.string().optional() });
const functionOutputItem = z.object({ type: z.literal('function_call_output'), call_id: z.string().min(1).max(200), output: text, id: z.string().optional(), status: z.string().optional() });

const formatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({ type: z.literal('json_schema'), name: z.string().min(1).max(64), schema: z.record(z.string(), z.unknown()), strict: z.boolean().nullish(), description: z.string().optional() }),
]);

export const responsesRequestSchema = z.strictObject({
  model: z.string().min(1).max(256),
  input: z.union([text, z.array(z.union([functionCallItem, functionOutputItem, messageItem])).min(1).max(10_000)]),
  instructions: text.nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  text: z.object({ format: formatSchema.optional() }).nullish(),
  tools: z
    .array(z.object({ type: z.literal('function'), name: z.string().min(1).max(64), description: z.string().nullish(), parameters: z.record(z.string(), z.unknown()).nullish(), strict: z.boolean().nullish() }))
    .max(128)
    .nullish(),
  tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.object({ type: z.literal('function'), name: z.string() })]).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
});

export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/** Chat completion parameter names as the Responses API names them, for errors about them. */
export const RESPONSES_PARAM_NAMES: Readonly<Record<string, string>> = {
  messages: 'input',
  max_tokens: 'max_output_tokens',
  max_completion_tokens: 'max_output_tokens',
  response_format: 'text.format',
};

export function parseResponsesRequest(body: unknown): ResponsesRequest {
  const parsed = responsesRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = issue.path.join('.') || null;
    throw invalidRequest(`Invalid value for ${param ?? 'the request'}: ${issue.message}.`, param, 'invalid_value');
  }
  const r = parsed.data;
  if (r.store === true) throw invalidRequest("store: true is not supported: this service keeps no responses. Send store: false, or leave it out.", 'store', 'unsupported_parameter');
  if (r.previous_response_id) {
    throw invalidRequest('previous_response_id is not supported: this service keeps no responses. Send the earlier turns in input instead.', 'previous_response_id', 'unsupported_parameter');
  }
  return r;
}

/** The same request as a chat completion request body. */
export function toChatRequest(r: ResponsesRequest): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [];
  if (r.instructions) messages.push({ role: 'system', content: r.instructions });
  if (typeof r.input === 'string') messages.push({ role: 'user', content: r.input });
  else {
    for (const item of r.input) {
      if (item.type === 'function_call') {
        // Consecutive calls of one turn become one assistant message with several tool calls.
        const last = messages.at(-1);
        const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
        if (last?.role === 'assistant' && Array.isArray(last.tool_calls)) (last.tool_calls as unknown[]).push(call);
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      } else if (item.type === 'function_call_output') {
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
      } else {
        const content = typeof item.content === 'string' ? item.content : item.content.map((p) => p.text).join('');
        messages.push({ role: item.role === 'developer' ? 'system' : item.role, content });
      }
    }
  }
  const format = r.text?.format;
  return {
    model: r.model,
    messages,
    ...(r.max_output_tokens != null ? { max_tokens: r.max_output_tokens } : {}),
    ...(r.temperature != null ? { temperature: r.temperature } : {}),
    ...(r.top_p != null ? { top_p: r.top_p } : {}),
    ...(format && format.type !== 'text'
      ? { response_format: format.type === 'json_object' ? { type: 'json_object' } : { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, strict: format.strict ?? undefined, description: format.description } } }
      : {}),
    ...(r.tools?.length ? { tools: r.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description ?? undefined, parameters: t.parameters ?? undefined, strict: t.strict ?? undefined } })) } : {}),
    ...(r.tool_choice != null ? { tool_choice: typeof r.tool_choice === 'string' ? r.tool_choice : { type: 'function', function: { name: r.tool_choice.name } } } : {}),
    ...(r.parallel_tool_calls != null ? { parallel_tool_calls: r.parallel_tool_calls } : {}),
    ...(r.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    ...(r.user ? { user: r.user } : {}),
  };
}
