/**
 * `POST /v1/responses`: the provider's Responses API (the default of current clients), served by the
 * chat completion path. The request is translated (requests/responses.ts), run exactly as a chat
 * completion (keys, plans, limits, usage, guaranteed forms), and its result or chunks are reshaped into
 * a `response` object or the `response.*` event sequence. Stateless: nothing is stored.
 */
import type { Caller } from '../access.ts';
import type { Outcome, RequestContext, ServiceParts } from '../context.ts';
import { ApiError } from '../errors.ts';
import { randomBase62 } from '../ids.ts';
import { parseResponsesRequest, RESPONSES_PARAM_NAMES, toChatRequest, type ResponsesRequest } from '../requests/responses.ts';
import { chatCompletions } from './chat-completions.ts';

type Json = Record<string, unknown>;

interface ChatToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}
interface ChatChoice {
  message?: { content?: string | null; tool_calls?: ChatToolCall[] };
  delta?: { content?: string | null; tool_calls?: ChatToolCall[] };
  finish_reason?: string | null;
}
interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number };
}

export async function responses(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  let req: ResponsesRequest | undefined;
  // Read and translated where the chat path reads its body, so limits and errors come in the same order.
  const inner: RequestContext = {
    ...ctx,
    readBody: async () => {
      req = parseResponsesRequest(await ctx.readBody());
      return toChatRequest(req);
    },
  };
  let outcome: Outcome;
  try {
    outcome = await chatCompletions(svc, caller, inner);
  } catch (e) {
    throw renameParam(e);
  }
  const head = { id: `resp_${randomBase62(24)}`, created_at: Math.floor(svc.clock.now() / 1000) };
  if (outcome.kind === 'json') {
    const chat = outcome.body as { model: string; choices: ChatChoice[]; usage: ChatUsage };
    const choice = chat.choices[0];
    const items: Json[] = [];
    const text = choice.message?.content ?? '';
    if (text || !choice.message?.tool_calls?.length) items.push(messageItem(`msg_${randomBase62(24)}`, text, 'completed'));
    for (const tc of choice.message?.tool_calls ?? []) items.push(callItem(`fc_${randomBase62(24)}`, tc.id ?? '', tc.function?.name ?? '', tc.function?.arguments ?? '', 'completed'));
    return { ...outcome, body: responseObject(head, req!, chat.model, statusOf(choice.finish_reason), items, usageOf(chat.usage)) };
  }
  return { ...outcome, events: responseEvents(outcome.events as AsyncIterable<Json>, head, req!) };
}

/** Errors about translated parameters name them as the Responses API does (`input`, not `messages`). */
function renameParam(e: unknown): unknown {
  if (!(e instanceof ApiError) || !e.param) return e;
  const [first, ...rest] = e.param.split(/(?=[.[])/);
  const renamed = RESPONSES_PARAM_NAMES[first];
  if (!renamed) return e;
  return new ApiError(e.status, e.type, e.message, { code: e.code, param: renamed + (first === 'messages' ? '' : rest.join('')), retryAfterSeconds: e.retryAfterSeconds, retryable: e.retryable });
}

function statusOf(finish: string | null | undefined): 'completed' | 'incomplete' {
  return finish === 'length' ? 'incomplete' : 'completed';
}

function usageOf(u: ChatUsage | undefined): Json | null {
  if (!u) return null;
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.total_tokens,
  };
}

function messageItem(id: string, text: string, status: string): Json {
  return { id, type: 'message', status, role: 'assistant', content: status === 'in_progress' ? [] : [{ type: 'output_text', text, annotations: [] }] };
}

function callItem(id: string, callId: string, name: string, args: string, status: string): Json {
  return { id, type: 'function_call', status, call_id: callId, name, arguments: args };
}

function responseObject(head: { id: string; created_at: number }, req: ResponsesRequest, model: string, status: string, output: Json[], usage: Json | null): Json {
  return {
    id: head.id,
    object: 'response',
    created_at: head.created_at,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    model,
    output,
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: null,
    store: false,
    temperature: req.temperature ?? 1,
    text: { format: req.text?.format ?? { type: 'text' } },
    tool_choice: req.tool_choice ?? 'auto',
    tools: req.tools ?? [],
    top_p: req.top_p ?? 1,
    truncation: 'disabled',
    usage,
    user: req.user ?? null,
    metadata: req.metadata ?? {},
  };
}

/** The chat chunks as the provider's `response.*` events, each with its sequence number. */
async function* responseEvents(chunks: AsyncIterable<Json>, head: { id: string; created_at: number }, req: ResponsesRequest): AsyncGenerator<Json> {
  let seq = 0;
  const ev = (type: string, body: Json): Json => ({ type, sequence_number: seq++, ...body });
  let model = req.model;
  let message: { id: string; index: number; text: string } | undefined;
  const calls = new Map<number, { id: string; index: number; callId: string; name: string; args: string }>();
  let nextIndex = 0;
  let finish: string | null = null;
  let usage: ChatUsage | undefined;
  const started = (status: string, output: Json[], u: Json | null) => responseObject(head, req, model, status, output, u);

  let announced = false;
  for await (const chunk of chunks) {
    if (!announced) {
      model = (chunk.model as string | undefined) ?? model;
      yield ev('response.created', { response: started('in_progress', [], null) });
      yield ev('response.in_progress', { response: started('in_progress', [], null) });
      announced = true;
    }
    if (chunk.usage) usage = chunk.usage as ChatUsage;
    for (const choice of (chunk.choices as ChatChoice[] | undefined) ?? []) {
      const d = choice.delta ?? {};
      if (d.content) {
        if (!message) {
          message = { id: `msg_${randomBase62(24)}`, index: nextIndex++, text: '' };
          yield ev('response.output_item.added', { output_index: message.index, item: messageItem(message.id, '', 'in_progress') });
          yield ev('response.content_part.added', { item_id: message.id, output_index: message.index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
        }
        message.text += d.content;
        yield ev('response.output_text.delta', { item_id: message.id, output_index: message.index, content_index: 0, delta: d.content });
      }
      for (const tc of d.tool_calls ?? []) {
        const key = tc.index ?? 0;
        let call = calls.get(key);
        if (!call) {
          call = { id: `fc_${randomBase62(24)}`, index: nextIndex++, callId: tc.id ?? '', name: tc.function?.name ?? '', args: '' };
          calls.set(key, call);
          yield ev('response.output_item.added', { output_index: call.index, item: callItem(call.id, call.callId, call.name, '', 'in_progress') });
        }
        const piece = tc.function?.arguments ?? '';
        if (piece) {
          call.args += piece;
          yield ev('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta: piece });
        }
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  if (!announced) yield ev('response.created', { response: started('in_progress', [], null) });
  const output: Json[] = [];
  if (message) {
    yield ev('response.output_text.done', { item_id: message.id, output_index: message.index, content_index: 0, text: message.text });
    yield ev('response.content_part.done', { item_id: message.id, output_index: message.index, content_index: 0, part: { type: 'output_text', text: message.text, annotations: [] } });
    const item = messageItem(message.id, message.text, 'completed');
    yield ev('response.output_item.done', { output_index: message.index, item });
    output[message.index] = item;
  }
  for (const call of calls.values()) {
    yield ev('response.function_call_arguments.done', { item_id: call.id, output_index: call.index, arguments: call.args });
    const item = callItem(call.id, call.callId, call.name, call.args, 'completed');
    yield ev('response.output_item.done', { output_index: call.index, item });
    output[call.index] = item;
  }
  const status = statusOf(finish);
  yield ev(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: started(status, output, usageOf(usage)) });
}
