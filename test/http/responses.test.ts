/**
 * The Responses API through the official openai client (client.responses.create and .stream), served
 * by the chat completion path: the same text as a chat completion, JSON formats, function tools with
 * function_call_output turns, the response.* event sequence, usage, and the stateless refusals.
 */
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let client: OpenAI;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  client = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('professional', { paid: true }), maxRetries: 0 });
});
afterAll(() => h.close());

describe('POST /v1/responses through the official client', () => {
  it('answers a string input with the same text a chat completion gives, as a response object with usage', async () => {
    const r = await client.responses.create({ model: 'svc-chat', input: 'Once upon a time', instructions: 'You tell stories.', max_output_tokens: 12, temperature: 0 });
    expect(r.id).toMatch(/^resp_/);
    expect(r.object).toBe('response');
    expect(['completed', 'incomplete']).toContain(r.status);
    const chat = await client.chat.completions.create({ model: 'svc-chat', messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Once upon a time' }], max_tokens: 12, temperature: 0 });
    expect(r.output_text).toBe(chat.choices[0].message.content);
    expect(r.usage!.output_tokens).toBe(chat.usage!.completion_tokens);
    expect(r.usage!.input_tokens).toBe(chat.usage!.prompt_tokens);
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + r.usage!.output_tokens);
    if (r.status === 'incomplete') expect(r.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });

  it('text.format json_schema gives JSON that validates', async () => {
    const r = await client.responses.create({
      model: 'svc-chat',
      input: [{ role: 'user', content: 'Give me a name and an age.' }],
      max_output_tokens: 80,
      text: { format: { type: 'json_schema', name: 'person', strict: true, schema: { type: 'object', properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 } }, required: ['name', 'age'], additionalProperties: false } } },
    });
    const value = JSON.parse(r.output_text) as { name: string; age: number };
    expect(typeof value.name).toBe('string');
    expect(Number.isInteger(value.age)).toBe(true);
  });

  it('function tools: a function_call item, then a turn with its function_call_output', async () => {
    const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', description: 'Weather in a city', strict: true, parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 10 } }, required: ['city'], additionalProperties: false } }];
    const r = await client.responses.create({ model: 'svc-chat', input: 'Weather in Paris?', tools, tool_choice: 'required', max_output_tokens: 60 });
    const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.name).toBe('get_weather');
    expect(typeof JSON.parse(call.arguments).city).toBe('string');
    const next = await client.responses.create({
      model: 'svc-chat',
      input: [{ role: 'user', content: 'Weather in Paris?' }, { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments }, { type: 'function_call_output', call_id: call.call_id, output: '{"temp": 21}' }],
      tools,
      max_output_tokens: 8,
    });
    expect(next.status === 'completed' || next.status === 'incomplete').toBe(true);
  });

  it('streams the response.* events the SDK accumulates into the same final response', async () => {
    const stream = client.responses.stream({ model: 'svc-chat', input: 'Once upon a time', max_output_tokens: 12, temperature: 0 });
    const types: string[] = [];
    let deltas = '';
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.output_text.delta') deltas += e.delta;
    }
    const final = await stream.finalResponse();
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_item.added');
    expect(types).toContain('response.content_part.added');
    expect(types.at(-1)).toMatch(/^response\.(completed|incomplete)$/);
    const whole = await client.responses.create({ model: 'svc-chat', input: 'Once upon a time', max_output_tokens: 12, temperature: 0 });
    expect(deltas).toBe(whole.output_text);
    expect(final.output_text).toBe(whole.output_text);
    expect(final.usage!.output_tokens).toBe(whole.usage!.output_tokens);
  });

  it('streams function call arguments as response.function_call_arguments.delta events', async () => {
    const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'lookup', strict: true, parameters: { type: 'object', properties: { q: { type: 'string', maxLength: 8 } }, required: ['q'], additionalProperties: false } }];
    const types: string[] = [];
    let args = '';
    for await (const e of await client.responses.create({ model: 'svc-chat', input: 'Look up cats', tools, tool_choice: 'required', max_output_tokens: 60, stream: true })) {
      types.push(e.type);
      if (e.type === 'response.function_call_arguments.delta') args += e.delta;
    }
    expect(types).toContain('response.function_call_arguments.done');
    expect(typeof JSON.parse(args).q).toBe('string');
  });

  it('is stateless: store: true and previous_response_id are refused with a 400 naming them; errors name Responses parameters', async () => {
    const stored = await client.responses.create({ model: 'svc-chat', input: 'hi', store: true }).catch((e: unknown) => e as APIError);
    expect(stored.status).toBe(400);
    expect((stored.error as { param: string }).param).toBe('store');
    const chained = await client.responses.create({ model: 'svc-chat', input: 'hi', previous_response_id: 'resp_x' }).catch((e: unknown) => e as APIError);
    expect(chained.status).toBe(400);
    expect((chained.error as { param: string }).param).toBe('previous_response_id');
    const noModel = await client.responses.create({ model: 'no-such-model', input: 'hi' }).catch((e: unknown) => e as APIError);
    expect(noModel.status).toBe(404);
    const tooMany = await client.responses.create({ model: 'svc-chat', input: 'hi', max_output_tokens: 10_000_000 }).catch((e: unknown) => e as APIError);
    expect(tooMany.status).toBe(400);
    expect((tooMany.error as { param: string }).param).toBe('max_output_tokens');
  });
});
