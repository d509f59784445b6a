/**
 * `POST /v1/chat/completions` request: the provider's shape, validated, normalised to what the service
 * runs. Unknown fields are ignored (zod strips them), as the provider's clients expect.
 */
import { z } from 'zod';
import { invalidRequest } from '../errors.ts';
import type { Feature } from '../plans.ts';
import type { ChatMessage } from '../prompt.ts';
import { issuesToError } from './issues.ts';
import { maxTokens, penalty, samplingFrom, seed, stop, temperature, topP, type SamplingRequest } from './sampling.ts';

const contentPart = z
  .object({ type: z.string(), text: z.unknown().optional() })
  .superRefine((part, ctx) => {
    if (part.type !== 'text') {
      ctx.addIssue({ code: 'custom', path: ['type'], message: `only 'text' content parts are supported, got ${JSON.stringify(part.type)}` });
    } else if (typeof part.text !== 'string') {
      ctx.addIssue({ code: 'invalid_type', expected: 'string', path: ['text'], input: part.text });
    }
  });

const message = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(contentPart)]).nullish(),
  name: z.string().nullish(),
  tool_calls: z.array(z.unknown()).nullish(),
  function_call: z.unknown().optional(),
});

const schema = z.object({
  model: z.string().min(1),
  messages: z.array(message).min(1),
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
  tools: z.array(z.unknown()).nullish(),
  tool_choice: z.unknown().optional(),
  functions: z.array(z.unknown()).nullish(),
  function_call: z.unknown().optional(),
  response_format: z.looseObject({ type: z.enum(['text', 'json_object', 'json_schema']) }).nullish(),
});

export interface ChatRequest extends SamplingRequest {
  model: string;
  messages: ChatMessage[];
  stream: boolean;
  includeUsage: boolean;
  logprobs: boolean;
  /** Features of the plan this request needs (checked before the "not supported yet" answer). */
  features: { feature: Feature; param: string }[];
  /** Parameters accepted in shape that this build cannot honour yet; a clear 400 once the plan allows them. */
  unsupported: { param: string; message: string }[];
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

  const features: ChatRequest['features'] = [];
  const unsupported: ChatRequest['unsupported'] = [];
  const later = (what: string) => `${what} is not supported yet by this service; the request was not run.`;
  if (r.tools != null) {
    features.push({ feature: 'functionCalling', param: 'tools' });
    unsupported.push({ param: 'tools', message: later("Function calling ('tools')") });
  }
  if (r.functions != null) {
    features.push({ feature: 'functionCalling', param: 'functions' });
    unsupported.push({ param: 'functions', message: later("Function calling ('functions')") });
  }
  if (r.response_format != null && r.response_format.type !== 'text') {
    features.push({ feature: 'jsonSchema', param: 'response_format' });
    unsupported.push({ param: 'response_format', message: later(`'response_format' of type '${r.response_format.type}'`) });
  }

  const messages = r.messages.map((m, i): ChatMessage => {
    const at = `messages[${i}]`;
    if (m.role === 'tool' || m.role === 'function') {
      throw invalidRequest(`Invalid '${at}.role': '${m.role}' messages belong to function calling, which is not supported yet.`, `${at}.role`);
    }
    if (m.tool_calls != null || m.function_call != null) {
      throw invalidRequest(`Invalid '${at}': tool and function calls in messages are not supported yet.`, m.tool_calls != null ? `${at}.tool_calls` : `${at}.function_call`);
    }
    if (m.content == null) throw invalidRequest(`Missing required parameter: '${at}.content'.`, `${at}.content`);
    const content = typeof m.content === 'string' ? m.content : m.content.map((p) => p.text as string).join('\n');
    // `developer` is the provider's newer name for system instructions.
    const role = m.role === 'developer' ? 'system' : m.role;
    return m.name ? { role, content, name: m.name } : { role, content };
  });

  return {
    model: r.model,
    messages,
    ...samplingFrom(r, r.max_completion_tokens ?? r.max_tokens),
    stream: r.stream === true,
    includeUsage: r.stream_options?.include_usage === true,
    logprobs: r.logprobs === true,
    features,
    unsupported,
  };
}
