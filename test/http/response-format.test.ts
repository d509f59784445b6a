/**
 * `response_format` through the official openai client on the tiny story model: JSON objects that
 * parse and schema answers that validate (ajv), whole and streamed, greedy and sampled; schema errors
 * as 400s naming the parameter, before any stream starts.
 */
import Ajv from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { bearer, postJson, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let client: OpenAI;
let key: string;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  key = h.key('scale', { paid: true });
  client = new OpenAI({ baseURL: h.baseURL, apiKey: key, maxRetries: 0 });
});
afterAll(() => h.close());

const ajv = new Ajv({ strict: false, allErrors: true });
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Tell me about the little cat, as JSON.' }];

/** temperature, seed */
const RUNS: [number, number][] = [
  [0, 1],
  [1, 1],
  [1, 2],
  [1, 3],
];

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 16 },
    age: { type: 'integer', minimum: 0, maximum: 20 },
    weight: { type: 'number', minimum: 0.5, maximum: 9.5 },
    colour: { enum: ['black', 'white', 'ginger'] },
    friends: { type: 'array', items: { type: 'string', maxLength: 8 }, minItems: 1, maxItems: 3 },
    home: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, floor: { type: 'integer', minimum: -1, maximum: 3 } },
      required: ['city'],
      additionalProperties: false,
    },
    nickname: { type: 'string', maxLength: 8 },
  },
  required: ['name', 'age', 'colour', 'friends', 'home'],
  additionalProperties: false,
};

describe('response_format json_object', () => {
  it('is not cut short by a caller stop string: a guaranteed form is never returned invalid with stop', async () => {
    for (const [temperature, seed] of RUNS.slice(0, 3)) {
      const r = await client.chat.completions.create({ model: 'svc-chat', messages, response_format: { type: 'json_object' }, stop: ['"', '}', ':'], temperature, seed, max_tokens: 60 });
      expect(r.choices[0].finish_reason).toBe('stop');
      expect(typeof JSON.parse(r.choices[0].message.content!), r.choices[0].message.content!).toBe('object');
    }
  });

  it('always parses as a JSON object, whole and streamed', async () => {
    for (const [temperature, seed] of RUNS.slice(0, 3)) {
      const r = await client.chat.completions.create({ model: 'svc-chat', messages, response_format: { type: 'json_object' }, temperature, seed, max_tokens: 60 });
      expect(r.choices[0].finish_reason).toBe('stop');
      const v = JSON.parse(r.choices[0].message.content!);
      expect(typeof v === 'object' && v !== null && !Array.isArray(v), r.choices[0].message.content!).toBe(true);
    }
    const stream = await client.chat.completions.create({ model: 'svc-chat', messages, response_format: { type: 'json_object' }, temperature: 1, seed: 9, max_tokens: 60, stream: true });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('stop');
    expect(JSON.parse(text)).toBeTypeOf('object');
  });

  it('takes the schema llama.cpp and WebLLM clients send with json_object, as an object or as JSON text', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 1, maximum: 3 } }, required: ['ok', 'n'] };
    for (const sent of [schema, JSON.stringify(schema)]) {
      const res = await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', messages, response_format: { type: 'json_object', schema: sent }, max_tokens: 40, temperature: 1, seed: 4 }, bearer(key));
      const body = await res.json();
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(ajv.validate(schema, JSON.parse(body.choices[0].message.content))).toBe(true);
    }
  });
});

describe('response_format json_schema', () => {
  it('validates for nested objects, arrays, enums, bounded numbers, required and optional fields', async () => {
    let sawOptional = false;
    for (const [temperature, seed] of RUNS) {
      const r = await client.chat.completions.create({
        model: 'svc-chat',
        messages,
        response_format: { type: 'json_schema', json_schema: { name: 'cat', schema: SCHEMA, strict: true } },
        temperature,
        seed,
        // Room beyond the shortest valid answer (65 tokens on this vocabulary), or the constraint forces that one from the start.
        max_tokens: 240,
      });
      const text = r.choices[0].message.content!;
      expect(r.choices[0].finish_reason).toBe('stop');
      const v = JSON.parse(text);
      expect(ajv.validate(SCHEMA, v), `${text} ${JSON.stringify(ajv.errors)}`).toBe(true);
      sawOptional ||= 'weight' in v || 'nickname' in v || 'floor' in v.home;
    }
    // Not a guarantee, but four answers without any optional field would mean the grammar forbids them.
    expect(sawOptional).toBe(true);
  });

  it('streams schema-valid JSON', async () => {
    const stream = client.chat.completions.stream({ model: 'svc-chat', messages, response_format: { type: 'json_schema', json_schema: { name: 'cat', schema: SCHEMA } }, temperature: 1, seed: 5, max_tokens: 240 });
    const final = await stream.finalChatCompletion();
    expect(ajv.validate(SCHEMA, JSON.parse(final.choices[0].message.content!))).toBe(true);
  });

  it('400s an invalid or unsupported schema before anything runs, saying why and where', async () => {
    const cases: [unknown, string][] = [
      [{ type: 'object', properties: { n: { type: 'integer', minimum: 5, maximum: 1 } } }, 'at /properties/n: no integer satisfies its bounds'],
      [{ type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } }, '/properties/tags/uniqueItems'],
      [{ type: 'objet' }, 'at /type: must be one of'],
    ];
    for (const [schema, message] of cases) {
      for (const stream of [false, true]) {
        const res = await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', messages, stream, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }, bearer(key));
        expect(res.status).toBe(400);
        expect(res.headers.get('content-type')).toBe('application/json');
        const { error } = await res.json();
        expect(error).toMatchObject({ type: 'invalid_request_error', param: 'response_format.json_schema.schema' });
        expect(error.message).toContain(message);
        expect(error.message.startsWith('response_format.json_schema.schema')).toBe(true);
      }
    }
    const res = await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', messages, response_format: { type: 'json_object', schema: '{"type": ' } }, bearer(key));
    expect((await res.json()).error).toMatchObject({ param: 'response_format.schema' });
  });

  it('returns what exists with finish_reason length when max_tokens cannot hold the shortest valid answer', async () => {
    const r = await client.chat.completions.create({ model: 'svc-chat', messages, response_format: { type: 'json_schema', json_schema: { name: 'cat', schema: SCHEMA } }, max_tokens: 5 });
    expect(r.choices[0].finish_reason).toBe('length');
    expect(r.usage!.completion_tokens).toBe(5);
    const text = r.choices[0].message.content!;
    expect(text.startsWith('{"')).toBe(true);
    expect(() => JSON.parse(text)).toThrow();
  });

  it('replaces the specialist’s own form, and refuses extension fields beside it', async () => {
    const r = await client.chat.completions.create({ model: 'svc-classify', messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { label: { enum: ['a', 'b'] } }, required: ['label'] } } }, max_tokens: 20 });
    expect(['a', 'b']).toContain(JSON.parse(r.choices[0].message.content!).label);
    const res = await postJson(`${h.baseURL}/chat/completions`, { model: 'svc-classify', messages, labels: ['x', 'y'], response_format: { type: 'json_object' } }, bearer(key));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ param: 'labels' });
  });
});

describe('a grammar this vocabulary cannot finish', () => {
  it('is a 400 that says so, and is not counted', async () => {
    // TinyStories-656K has no byte tokens: after the model picks "x" or "y", the "é" the grammar then
    // requires cannot be written. Compiling cannot see it (the start is a free choice); generation can.
    const small = await startServer({ engine: () => testEngine('TinyStories-656K-Q8_0.gguf') });
    try {
      const key = small.key('scale', { paid: true });
      const res = await postJson(`${small.baseURL}/chat/completions`, { model: 'svc-chat', messages, max_tokens: 20, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { enum: ['xé', 'yé'] } } } }, bearer(key));
      const body = await res.json();
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'output_form_unreachable', param: 'response_format' });
      expect(body.error.message).toContain("This model's vocabulary cannot produce the required output form");
      const usage = await (await fetch(`${small.baseURL}/usage`, { headers: bearer(key) })).json();
      expect(usage.requests_used).toBe(0);
    } finally {
      await small.close();
    }
  });
});
