/**
 * `POST /v1/chat/completions` request: the provider's shape, validated, normalised to what the service
 * runs. Unknown fields are ignored (zod strips them), as the provider's clients expect; our extension
 * fields (extensions.ts) are known, so a wrong type is a 400 naming them.
 */
import { z } from 'zod';
import type { ChatMessage, ChatToolCall } from '../../engine/chat/index.ts';
import { invalidRequest } from '../errors.ts';
import type { ResponseFormat } from '../output/response-format.ts';
import type { FunctionDef, ToolsRequest } from '../output/tools.ts';
import type { Feature } from '../plans.ts';
import { extensionFields, outputOptionsFrom, type OutputOptions } from './extensions.ts';
import { findDepthExcess, MAX_JSON_DEPTH } from '../json-depth.ts';
import { MAX_MESSAGES, MAX_TOOLS } from '../request-limits.ts';
import { issuesToError } from './issues.ts';
import { maxTokens, penalty, samplingFrom, seed, stop, temperature, topP, type SamplingRequest } from './sampling.ts';

const contentPart = z
  .object({ type: z.string(), text: z.unknown().optional() })
  .superRefine((part, ctx) => {
    if (part.type !== 'text') {
      ctx.addIssue({ code: 'custom', path: ['type'], message: "only 'text' content parts are supported" });
    } else if (typeof part.text !== 'string') {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', path: ['text'], input: part.text });
    }
  });

/**
 * JSON carried as text (tool-call arguments, a schema as a string) is parsed later and walked
 * recursively, out of reach of the body's own depth check; it gets the same limit.
 */
const jsonText = z.string().refine((t) => findDepthExcess(t) === undefined, `nests deeper than the ${MAX_JSON_DEPTH} levels of arrays and objects this API accepts`);

const functionCall = z.object({ name: z.string().min(1), arguments: jsonText });

const message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(contentPart)]).nullish(),
  name: z.string().nullish(),
  tool_calls: z.array(z.object({ id: z.string().nullish(), type: z.literal('function').nullish(), function: functionCall })).nullish(),
  function_call: functionCall.nullish(),
  tool_call_id: z.string().nullish(),
});

/** The provider's rule for function names. */
const functionDef = z.object({
  name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "_" or "-"'),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const responseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  // llama.cpp and WebLLM send a schema here, WebLLM as JSON text.
  z.object({ type: z.literal('json_object'), schema: z.union([z.record(z.string(), z.unknown()), jsonText]).nullish() }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "_" or "-"'),
      description: z.string().nullish(),
      schema: z.record(z.string(), z.unknown()).nullish(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

const schema = z.object({
  model: z.string().min(1),
  messages: z.array(message).min(1).max(MAX_MESSAGES),
  max_tokens: maxTokens,
  max_completion_tokens: maxTokens,
  temperature,
  top_p: topP,
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  stop,
  seed,
  n: z.number().int().nullish(),
  presence_penalty: penalty,
  frequency_penalty: penalty,
  user: z.string().nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  logit_bias: z.record(z.string(), z.number()).nullish(),
  tools: z.array(z.object({ type: z.literal('function'), function: functionDef })).min(1).max(MAX_TOOLS).nullish(),
  tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) })]).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  functions: z.array(functionDef).min(1).max(MAX_TOOLS).nullish(),
  function_call: z.union([z.enum(['none', 'auto']), z.object({ name: z.string() })]).nullish(),
  response_format: responseFormat.nullish(),
  ...extensionFields,
});

type WireMessage = z.infer<typeof message>;

export interface ChatRequest extends SamplingRequest {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  includeUsage: boolean;
  logprobs: boolean;
  /** Features of the plan this request needs. */
  features: { feature: Feature; param: string }[];
  responseFormat: ResponseFormat;
  tools?: ToolsRequest;
  /** Extension fields shaping the specialist's output. */
  output: OutputOptions;
}

export function parseChatRequest(body: unknown): ChatRequest {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw issuesToError(parsed.error.issues, body);
  const r = parsed.data;

  if (r.n != null && r.n !== 1) throw invalidRequest(`Invalid 'n': only n=1 is supported, got ${r.n}.`, 'n');
  if (r.stream_options != null && r.stream !== true) {
    throw invalidRequest("The 'stream_options' parameter is only allowed when 'stream' is true.", 'stream_options');
  }
  if (r.max_tokens != null && r.max_completion_tokens != null && r.max_tokens !== r.max_completion_tokens) {
    throw invalidRequest("'max_tokens' and 'max_completion_tokens' disagree; send one of them.", 'max_completion_tokens');
  }
  if (r.top_logprobs != null && r.top_logprobs > 0) {
    throw invalidRequest("Invalid 'top_logprobs': alternatives are not available; only 0 is supported (logprobs of the sampled tokens come with 'logprobs': true).", 'top_logprobs');
  }
  if (r.top_logprobs != null && r.logprobs !== true) {
    throw invalidRequest("'top_logprobs' needs 'logprobs' set to true.", 'top_logprobs');
  }
  if (r.logit_bias != null && Object.keys(r.logit_bias).length > 0) {
    throw invalidRequest("'logit_bias' is not supported.", 'logit_bias');
  }
  if (r.tool_choice != null && r.tools == null) throw invalidRequest("'tool_choice' is only allowed when 'tools' are specified.", 'tool_choice');
  if (r.function_call != null && r.functions == null) throw invalidRequest("'function_call' is only allowed when 'functions' are specified.", 'function_call');
  if (r.tools != null && r.functions != null) throw invalidRequest("Send 'tools' or the legacy 'functions', not both.", 'functions');

  const features: ChatRequest['features'] = [];
  if (r.tools != null) features.push({ feature: 'functionCalling', param: 'tools' });
  if (r.functions != null) features.push({ feature: 'functionCalling', param: 'functions' });
  if (r.response_format != null && r.response_format.type !== 'text') features.push({ feature: 'jsonSchema', param: 'response_format' });

  return {
    model: r.model,
    messages: r.messages.map(toChatMessage),
    ...samplingFrom(r, r.max_completion_tokens ?? r.max_tokens),
    stream: r.stream === true,
    includeUsage: r.stream_options?.include_usage === true,
    logprobs: r.logprobs === true,
    features,
    responseFormat: r.response_format ?? { type: 'text' },
    tools: toolsRequest(r),
    output: outputOptionsFrom(r),
  };
}

function toolsRequest(r: z.infer<typeof schema>): ToolsRequest | undefined {
  const def = (f: z.infer<typeof functionDef>): FunctionDef => ({
    name: f.name,
    ...(f.description != null ? { description: f.description } : {}),
    ...(f.parameters != null ? { parameters: f.parameters } : {}),
  });
  if (r.tools != null) {
    const c = r.tool_choice ?? 'auto';
    return { functions: r.tools.map((t) => def(t.function)), choice: typeof c === 'string' ? c : { name: c.function.name }, parallel: r.parallel_tool_calls !== false, legacy: false };
  }
  if (r.functions != null) {
    const c = r.function_call ?? 'auto';
    return { functions: r.functions.map(def), choice: typeof c === 'string' ? c : { name: c.name }, parallel: false, legacy: true };
  }
  return undefined;
}

/** A wire message as the chat renderer takes it; tool and function results become `tool` messages. */
function toChatMessage(m: WireMessage, i: number): ChatMessage {
  const at = `messages[${i}]`;
  const content = m.content == null ? null : typeof m.content === 'string' ? m.content : m.content.map((p) => p.text as string).join('\n');
  const name = m.name ? { name: m.name } : {};
  if ((m.tool_calls != null || m.function_call != null) && m.role !== 'assistant') {
    throw invalidRequest(`Invalid '${at}': only assistant messages carry tool or function calls.`, m.tool_calls != null ? `${at}.tool_calls` : `${at}.function_call`);
  }
  const required = (what: string) => invalidRequest(`Missing required parameter: '${at}.${what}'.`, `${at}.${what}`);
  switch (m.role) {
    case 'assistant': {
      const calls: ChatToolCall[] = [
        ...(m.tool_calls ?? []).map((c) => ({ ...(c.id != null ? { id: c.id } : {}), type: 'function' as const, function: c.function })),
        ...(m.function_call != null ? [{ type: 'function' as const, function: m.function_call }] : []),
      ];
      if (content == null && calls.length === 0) throw required('content');
      return { role: 'assistant', content, ...(calls.length > 0 ? { tool_calls: calls } : {}), ...name };
    }
    case 'tool':
      if (content == null) throw required('content');
      if (m.tool_call_id == null) throw required('tool_call_id');
      return { role: 'tool', content, tool_call_id: m.tool_call_id, ...name };
    case 'function':
      // The legacy form of a tool result: named by the function, not by a call id.
      if (content == null) throw required('content');
      if (!m.name) throw required('name');
      return { role: 'tool', content, name: m.name };
    default:
      if (content == null) throw required('content');
      // `developer` is the provider's newer name for system instructions.
      return { role: m.role === 'developer' ? 'system' : m.role, content, ...name };
  }
}
