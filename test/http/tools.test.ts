/**
 * Function calling through the official openai client on the tiny story model (no tool training at
 * all): every call names a tool and its arguments validate (ajv), for auto, required and a named
 * function, whole and streamed, with the legacy `functions` too.
 */
import Ajv from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderChat } from '../../engine/chat/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { bearer, postJson, startServer, type Harness } from './helpers/harness.ts';
import { loadSpecialists } from '../../adapters/config-node.ts';

let h: Harness;
let client: OpenAI;
let key: string;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  key = h.key('professional', { paid: true });
  client = new OpenAI({ baseURL: h.baseURL, apiKey: key, maxRetries: 0 });
});
afterAll(() => h.close());

const ajv = new Ajv({ strict: false, allErrors: true });

const WEATHER = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 16 }, days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { enum: ['c', 'f'] } },
  required: ['city'],
  additionalProperties: false,
};
const ADD = { type: 'object', properties: { a: { type: 'number', minimum: -100, maximum: 100 }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false };
const TOOLS: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER } },
  { type: 'function', function: { name: 'add', description: 'Add two numbers', parameters: ADD } },
];
const SCHEMAS: Record<string, object> = { get_weather: WEATHER, add: ADD };
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];

/** temperature, seed */
const RUNS: [number, number][] = [
  [0, 1],
  [1, 1],
  [1, 2],
];

function expectValidCalls(message: OpenAI.ChatCompletionMessage): void {
  for (const call of message.tool_calls ?? []) {
    expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(call.type).toBe('function');
    if (call.type !== 'function') continue;
    expect(Object.keys(SCHEMAS)).toContain(call.function.name);
    expect(typeof call.function.arguments).toBe('string');
    const args = JSON.parse(call.function.arguments);
    expect(ajv.validate(SCHEMAS[call.function.name], args), `${call.function.arguments} ${JSON.stringify(ajv.errors)}`).toBe(true);
  }
}

describe('tools', () => {
  it('required: one or more valid calls, content null, finish_reason tool_calls', async () => {
    for (const [temperature, seed] of RUNS) {
      const r = await client.chat.completions.create({ model: 'svc-chat', messages, tools: TOOLS, tool_choice: 'required', temperature, seed, max_tokens: 120 });
      const c = r.choices[0];
      expect(c.finish_reason).toBe('tool_calls');
      expect(c.message.content).toBeNull();
      expect(c.message.tool_calls!.length).toBeGreaterThanOrEqual(1);
      expectValidCalls(c.message);
    }
  });

  it('a named function: exactly one call of it; parallel_tool_calls false: exactly one call', async () => {
    for (const [temperature, seed] of RUNS.slice(0, 2)) {
      const named = await client.chat.completions.create({ model: 'svc-chat', messages, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'add' } }, temperature, seed, max_tokens: 120 });
      expect(named.choices[0].message.tool_calls).toHaveLength(1);
      expect((named.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall).function.name).toBe('add');
      expectValidCalls(named.choices[0].message);

      const single = await client.chat.completions.create({ model: 'svc-chat', messages, tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, temperature, seed, max_tokens: 120 });
      expect(single.choices[0].message.tool_calls).toHaveLength(1);
      expectValidCalls(single.choices[0].message);
    }
  });

  it('auto: the model chooses text or calls; calls it makes are valid', async () => {
    for (const [temperature, seed] of [...RUNS, [1.5, 7] as [number, number]]) {
      const r = await client.chat.completions.create({ model: 'svc-chat', messages, tools: TOOLS, temperature, seed, max_tokens: 30 });
      const c = r.choices[0];
      if (c.message.tool_calls?.length) {
        expect(c.finish_reason).toBe('tool_calls');
        expectValidCalls(c.message);
      } else {
        expect(typeof c.message.content).toBe('string');
        expect(c.message.content).not.toContain('<tool_call>');
        expect(['stop', 'length']).toContain(c.finish_reason);
      }
    }
  });

  it('streams delta.tool_calls as the provider does, and the stream helper reassembles valid calls', async () => {
    const stream = await client.chat.completions.create({ model: 'svc-chat', messages, tools: TOOLS, tool_choice: 'required', temperature: 1, seed: 3, max_tokens: 150, stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const pieces = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(pieces.length).toBeGreaterThan(1);
    const firsts = pieces.filter((p) => p.id !== undefined);
    // The first piece of each call: index, id, type and name, with empty arguments; the rest only append arguments.
    for (const f of firsts) {
      expect(f).toMatchObject({ type: 'function', function: { arguments: '' } });
      expect(f.id).toMatch(/^call_/);
      expect(f.function!.name).toBeTruthy();
    }
    expect(firsts.map((f) => f.index)).toEqual(firsts.map((_, i) => i));
    for (const p of pieces.filter((x) => x.id === undefined)) expect(Object.keys(p).sort()).toEqual(['function', 'index']);
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('tool_calls');
    for (const f of firsts) {
      const args = pieces.filter((p) => p.index === f.index).map((p) => p.function!.arguments).join('');
      expect(ajv.validate(SCHEMAS[f.function!.name!], JSON.parse(args)), args).toBe(true);
    }

    const helper = client.chat.completions.stream({ model: 'svc-chat', messages, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_weather' } }, temperature: 1, seed: 4, max_tokens: 120 });
    const final = await helper.finalChatCompletion();
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(final.choices[0].message.tool_calls).toHaveLength(1);
    expectValidCalls(final.choices[0].message);
  });

  it('auto, streamed: text without the call syntax, or valid calls', async () => {
    for (const seed of [1, 2]) {
      const final = await client.chat.completions.stream({ model: 'svc-chat', messages, tools: TOOLS, temperature: 1, seed, max_tokens: 30 }).finalChatCompletion();
      const c = final.choices[0];
      if (c.message.tool_calls?.length) expectValidCalls(c.message);
      else expect(c.message.content ?? '').not.toContain('<tool_call>');
    }
  });

  it('whole and streamed answers agree for the same seed', async () => {
    const params = { model: 'svc-chat', messages, tools: TOOLS, tool_choice: 'required' as const, temperature: 1, seed: 11, max_tokens: 120 };
    const whole = await client.chat.completions.create(params);
    const final = await client.chat.completions.stream(params).finalChatCompletion();
    const strip = (m: OpenAI.ChatCompletionMessage) => (m.tool_calls ?? []).map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : []));
    expect(strip(final.choices[0].message)).toEqual(strip(whole.choices[0].message));
  });

  it('takes a conversation with earlier calls and their results', async () => {
    const first = await client.chat.completions.create({ model: 'svc-chat', messages, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 120 });
    const call = first.choices[0].message.tool_calls![0];
    const result = 'Sunny, 25 degrees.';
    // tool_choice none: no grammar and the tools are not shown; the earlier call and its result are.
    const plain = await client.chat.completions.create({ model: 'svc-chat', messages, tools: TOOLS, tool_choice: 'none', max_tokens: 4 });
    const r = await client.chat.completions.create({
      model: 'svc-chat',
      messages: [...messages, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: result }],
      tools: TOOLS,
      tool_choice: 'none',
      max_tokens: 4,
    });
    expect(r.choices[0].message.tool_calls).toBeUndefined();
    expect(typeof r.choices[0].message.content).toBe('string');
    // The prompt is the fallback format with the call and its result in it, token for token.
    const engine = await testEngine();
    const fn = (call as OpenAI.ChatCompletionMessageFunctionToolCall).function;
    const expected = renderChat({ tokenizer: engine.tokenizer }, [
      { role: 'system', content: loadSpecialists().get('chat')!.systemPrompt },
      { role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: fn }] },
      { role: 'tool', tool_call_id: call.id, content: result },
    ]);
    expect(expected.text).toContain(`### Assistant:\n<tool_call>\n{"name": "get_weather", "arguments": `);
    expect(expected.text).toContain(`### Tool (get_weather):\n${result}`);
    expect(r.usage!.prompt_tokens).toBe(expected.tokens.length);
    expect(plain.usage!.prompt_tokens).toBeLessThan(expected.tokens.length);
  });

  it('400s what cannot be a tool-call grammar, naming the parameter', async () => {
    const post = (body: Record<string, unknown>) => postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', messages, max_tokens: 8, ...body }, bearer(key));
    const cases: [Record<string, unknown>, string, string][] = [
      [{ tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice', 'tool_choice names "nope", which is not among the tools'],
      [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { x: { type: 'integer', minimum: 3, maximum: 1 } } } } }] }, 'tools[0].function.parameters', 'no integer satisfies'],
      [{ tools: [{ type: 'function', function: { name: 'f' } }, { type: 'function', function: { name: 'f' } }] }, 'tools', 'used by two tools'],
      [{ functions: [{ name: 'f', parameters: { type: 'object', properties: { x: { type: 'string', uniqueItems: true } } } }] }, 'functions[0].parameters', 'uniqueItems'],
      [{ functions: [{ name: 'f' }], function_call: { name: 'g' } }, 'function_call', 'function_call names "g"'],
      [{ tools: TOOLS, response_format: { type: 'json_object' } }, 'response_format', 'cannot be combined'],
    ];
    for (const [body, param, message] of cases) {
      const res = await post(body);
      const { error } = await res.json();
      expect(res.status, JSON.stringify(error)).toBe(400);
      expect(error.param).toBe(param);
      expect(error.message).toContain(message);
    }
  });
});

describe('legacy functions', () => {
  const FUNCTIONS = TOOLS.map((t) => (t as OpenAI.ChatCompletionFunctionTool).function);

  it('answers message.function_call with valid arguments and finish_reason function_call', async () => {
    for (const [temperature, seed] of RUNS.slice(0, 2)) {
      const res = await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', messages, functions: FUNCTIONS, function_call: { name: 'get_weather' }, temperature, seed, max_tokens: 120 }, bearer(key));
      const c = (await res.json()).choices[0];
      expect(c.finish_reason).toBe('function_call');
      expect(c.message.content).toBeNull();
      expect(c.message.tool_calls).toBeUndefined();
      expect(c.message.function_call.name).toBe('get_weather');
      expect(ajv.validate(WEATHER, JSON.parse(c.message.function_call.arguments))).toBe(true);
    }
  });

  it('streams delta.function_call pieces that the stream helper reassembles', async () => {
    const stream = client.chat.completions.stream({ model: 'svc-chat', messages, functions: FUNCTIONS, function_call: { name: 'add' }, temperature: 1, seed: 2, max_tokens: 120 });
    const final = await stream.finalChatCompletion();
    const fc = final.choices[0].message.function_call!;
    expect(final.choices[0].finish_reason).toBe('function_call');
    expect(fc.name).toBe('add');
    expect(ajv.validate(ADD, JSON.parse(fc.arguments))).toBe(true);
  });

  it('with function_call auto, text or a valid call', async () => {
    const res = await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', messages, functions: FUNCTIONS, temperature: 1, seed: 5, max_tokens: 40 }, bearer(key));
    const c = (await res.json()).choices[0];
    if (c.message.function_call) expect(ajv.validate(SCHEMAS[c.message.function_call.name], JSON.parse(c.message.function_call.arguments))).toBe(true);
    else expect(typeof c.message.content).toBe('string');
  });
});
