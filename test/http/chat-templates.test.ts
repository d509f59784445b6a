/**
 * Prompts go through the model's own chat template when it has one (tools included, where the template
 * shows them), else through the documented fallback; the fallback's stop string only applies to free
 * text. The test models have no template, so one is given to the real engine here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderChat } from '../../engine/chat/index.ts';
import type { TextEngine } from '../../engine/types.ts';
import { QWEN25_TOOLS } from '../chat/templates.ts';
import { testEngine } from '../helpers/engine.ts';
import { bearer, postJson, startServer, type Harness } from './helpers/harness.ts';
import { watched, type Watched } from './helpers/watched.ts';
import { loadSpecialists } from '../../adapters/config-node.ts';

const system = () => loadSpecialists().get('chat')!.systemPrompt;
const user = 'Tell me about the weather.';
const TOOLS = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 10 } }, required: ['city'] } } }];

let engine: TextEngine;
let templated: Watched;
let plain: Watched;
let withTemplate: Harness;
let without: Harness;
let keys: [string, string];
beforeAll(async () => {
  engine = await testEngine();
  templated = watched(engine, QWEN25_TOOLS);
  plain = watched(engine);
  withTemplate = await startServer({ engine: templated });
  without = await startServer({ engine: plain });
  keys = [withTemplate.key('professional', { paid: true }), without.key('professional', { paid: true })];
});
afterAll(async () => {
  await withTemplate.close();
  await without.close();
});

const chat = (h: Harness, key: string, body: Record<string, unknown>) =>
  postJson(`${h.baseURL}/chat/completions`, { model: 'svc-chat', messages: [{ role: 'user', content: user }], max_tokens: 40, ...body }, bearer(key));

describe('prompts', () => {
  it('use the model’s template, with the tools in it, and no fallback stop string', async () => {
    expect((await chat(withTemplate, keys[0], { max_tokens: 2 })).status).toBe(200);
    const expected = renderChat({ tokenizer: engine.tokenizer, chatTemplate: QWEN25_TOOLS }, [{ role: 'system', content: system() }, { role: 'user', content: user }]);
    expect(expected.text.startsWith(`<|im_start|>system\n${system()}<|im_end|>`)).toBe(true);
    expect(templated.calls[0].tokens).toEqual(expected.tokens);
    expect(templated.calls[0].stop).toEqual([]);

    const res = await chat(withTemplate, keys[0], { tools: TOOLS, tool_choice: 'required', max_tokens: 120 });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    const withTools = renderChat({ tokenizer: engine.tokenizer, chatTemplate: QWEN25_TOOLS }, [{ role: 'system', content: system() }, { role: 'user', content: user }], { tools: TOOLS });
    expect(withTools.text).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather"');
    expect(templated.calls[1].tokens).toEqual(withTools.tokens);
    // Whatever the template says about calls, the grammar writes them, so they are read back the same way.
    expect(body.choices[0].message.tool_calls[0].function.name).toBe('get_weather');
    expect(JSON.parse(body.choices[0].message.tool_calls[0].function.arguments)).toMatchObject({ city: expect.any(String) });
  });

  it('fall back to the documented format without a template; its stop string only for free text', async () => {
    await chat(without, keys[1], { max_tokens: 2, stop: 'END' });
    const expected = renderChat({ tokenizer: engine.tokenizer }, [{ role: 'system', content: system() }, { role: 'user', content: user }]);
    expect(expected.text).toBe(`### System:\n${system()}\n\n### User:\n${user}\n\n### Assistant:\n`);
    expect(plain.calls[0].tokens).toEqual(expected.tokens);
    expect(plain.calls[0].stop).toEqual(['END', '\n### ']);
    await chat(without, keys[1], { max_tokens: 30, response_format: { type: 'json_object' } });
    expect(plain.calls[1].stop).toEqual([]);
    // The output grammar's budget is the generation's.
    expect(plain.calls[1].maxTokens).toBe(30);
    expect(plain.calls[1].constraint).toBeDefined();
  });
});
