/**
 * The official openai client's own helpers, unchanged, against the server on the tiny story model:
 * structured outputs from a zod schema (`chat.completions.parse`, `zodResponseFormat`; openai 6 takes
 * zod 4) and tool calls that run a local function (`chat.completions.runTools`, `zodFunction`).
 */
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { testEngine } from '../helpers/engine.ts';
import { startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let client: OpenAI;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  client = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('professional', { paid: true }), maxRetries: 0 });
});
afterAll(() => h.close());

const Cat = z.object({
  name: z.string().max(16),
  age: z.number().int().min(0).max(20),
  colour: z.enum(['black', 'white', 'ginger']),
  toys: z.array(z.string().max(8)).max(2),
  owner: z.object({ city: z.string().max(10) }).nullable(),
});

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Describe the cat.' }];

describe('chat.completions.parse with zodResponseFormat', () => {
  it('returns message.parsed that the zod schema accepts, greedy and sampled', async () => {
    for (const [temperature, seed] of [
      [0, 1],
      [1, 2],
      [1, 3],
    ]) {
      const r = await client.chat.completions.parse({ model: 'svc-chat', messages, response_format: zodResponseFormat(Cat, 'cat'), temperature, seed, max_tokens: 200 });
      const m = r.choices[0].message;
      expect(r.choices[0].finish_reason).toBe('stop');
      expect(m.refusal ?? null).toBeNull();
      expect(m.parsed).not.toBeNull();
      expect(Cat.parse(m.parsed)).toEqual(m.parsed);
    }
  });

  it('streams into the same parsed object', async () => {
    const stream = client.chat.completions.stream({ model: 'svc-chat', messages, response_format: zodResponseFormat(Cat, 'cat'), temperature: 1, seed: 8, max_tokens: 200 });
    const final = await stream.finalChatCompletion();
    expect(Cat.parse(final.choices[0].message.parsed)).toEqual(final.choices[0].message.parsed);
  });
});

describe('chat.completions.runTools', () => {
  const Add = z.object({ a: z.number().min(-50).max(50), b: z.number().min(-50).max(50) });

  it('runs a local function on arguments the model produced, then continues the conversation', async () => {
    const calls: z.infer<typeof Add>[] = [];
    const runner = client.chat.completions.runTools({
      model: 'svc-chat',
      messages: [{ role: 'user', content: 'What is 2 plus 3?' }],
      tools: [zodFunction({ name: 'add', description: 'Add two numbers', parameters: Add, function: (args) => (calls.push(args), args.a + args.b) })],
      tool_choice: { type: 'function', function: { name: 'add' } },
      temperature: 1,
      seed: 4,
      max_tokens: 80,
    });
    await runner.done();
    // zodFunction parsed the arguments with the zod schema before the function ran.
    expect(calls).toHaveLength(1);
    expect(Add.parse(calls[0])).toEqual(calls[0]);
    const result = await runner.finalFunctionToolCallResult();
    expect(result).toBe(String(calls[0].a + calls[0].b));
    const history = runner.messages;
    expect(history.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);

    // The conversation goes on with the tool's result in it, as an application would send it.
    const next = await client.chat.completions.create({ model: 'svc-chat', messages: history as OpenAI.ChatCompletionMessageParam[], max_tokens: 8 });
    expect(next.choices[0].message.role).toBe('assistant');
    expect(typeof next.choices[0].message.content).toBe('string');
  });

  it('works streamed, with a plain function and its own parser', async () => {
    let seen: unknown;
    const runner = client.chat.completions.runTools({
      model: 'svc-chat',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather for a city',
            parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false },
            parse: (input: string) => JSON.parse(input) as { city: string },
            function: (args: { city: string }) => {
              seen = args;
              return { city: args.city, sky: 'clear' };
            },
          },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      stream: true,
      max_tokens: 60,
    });
    await runner.done();
    expect(seen).toMatchObject({ city: expect.any(String) });
    expect(JSON.parse((await runner.finalFunctionToolCallResult())!)).toEqual({ city: (seen as { city: string }).city, sky: 'clear' });
  });
});
