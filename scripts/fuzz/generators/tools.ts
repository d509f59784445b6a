/** Hostile function calling: tool lists, tool_choice, legacy functions, tool messages. */
import { CHAT, chatBody, nestedSchemaText, post, RAW, req, splice, type GenContext, type Generator } from '../cases.ts';

function tool(name: unknown, parameters?: unknown, description?: unknown): Record<string, unknown> {
  const fn: Record<string, unknown> = { name };
  if (parameters !== undefined) fn.parameters = parameters;
  if (description !== undefined) fn.description = description;
  return { type: 'function', function: fn };
}

const PARAMS = { type: 'object', properties: { city: { type: 'string', maxLength: 8 } }, required: ['city'] };

function toolCase(g: GenContext, name: string, over: Record<string, unknown>, expect: (number | string)[], key = g.keys.main) {
  return req('tools', `tools/${name}`, post(CHAT, chatBody(over), key), expect);
}

const manyTools: Generator = (g) => {
  // Mostly over the 128 limit; accepted lists stay short, since tools are rendered into the prompt.
  const n = g.rng.bool(0.75) ? g.rng.logInt(129, 500) : g.rng.int(1, 16);
  const tools = Array.from({ length: n }, (_, i) => tool(`f_${i}`, g.rng.bool() ? PARAMS : undefined, g.rng.bool(0.3) ? 'does a thing' : undefined));
  // Over 128 tools is refused before any grammar; up to it, a real grammar of n alternatives.
  return toolCase(g, 'many-tools', { tools, tool_choice: g.rng.pick(['auto', 'required', 'none', undefined]) }, n > 128 ? [400] : [200, 400]);
};

const deepParams: Generator = (g) => {
  const depth = g.rng.logInt(3, 3000);
  const body = splice(chatBody({ tools: [tool('deep', RAW)], tool_choice: 'required' }), nestedSchemaText(depth, '{"type":"string","maxLength":2}', 'x'));
  return req('tools', 'tools/deep-parameters', post(CHAT, body, g.keys.main), depth < 31 ? [200, 400] : [400]);
};

const duplicateNames: Generator = (g) => {
  const n = g.rng.int(2, 50);
  return toolCase(g, 'duplicate-names', { tools: Array.from({ length: n }, () => tool('same', PARAMS)), tool_choice: 'required' }, [400]);
};

const BAD_NAMES: unknown[] = ['', 'a b', 'x'.repeat(65), 'x'.repeat(10000), 'ü', '../etc/passwd', 'a.b', null, 5, [], {}, 'f\u0000', '<tool_call>', 'name"quote'];

const invalidNames: Generator = (g) => toolCase(g, 'invalid-names', { tools: [tool(g.rng.pick(BAD_NAMES), PARAMS)], tool_choice: g.rng.pick(['auto', 'required']) }, [400]);

const hugeDescription: Generator = (g) => {
  const len = g.rng.logInt(10_000, 900_000);
  return toolCase(g, 'huge-description', { tools: [tool('f', PARAMS, 'd'.repeat(len))], tool_choice: g.rng.pick(['auto', 'none', 'required']) }, [200, 400, 413]);
};

const BAD_CHOICES: unknown[] = ['always', 'NONE', '', 5, true, {}, [], { type: 'function' }, { type: 'function', function: {} }, { type: 'function', function: { name: 'nope' } }, { type: 'tool', function: { name: 'f' } }, { function: { name: 'f' } }, { type: 'function', function: { name: 'f'.repeat(5000) } }];

const badToolChoice: Generator = (g) => toolCase(g, 'bad-tool-choice', { tools: [tool('f', PARAMS)], tool_choice: g.rng.pick(BAD_CHOICES) }, [400]);

const choiceWithoutTools: Generator = (g) => toolCase(g, 'tool-choice-without-tools', { tool_choice: g.rng.pick(['required', { type: 'function', function: { name: 'f' } }]) }, [400]);

const parallel: Generator = (g) => {
  const v = g.rng.pick<unknown>(['yes', 1, 0, [], {}, false, true]);
  return toolCase(g, 'parallel-tool-calls', { tools: [tool('f', PARAMS), tool('g')], tool_choice: 'required', parallel_tool_calls: v }, typeof v === 'boolean' ? [200] : [400]);
};

const legacy: Generator = (g) => {
  const variant = g.rng.int(0, 5);
  const fns = [{ name: 'get_weather', parameters: PARAMS }];
  const over: Record<string, unknown>[] = [
    { functions: fns, function_call: { name: 'missing' } },
    { functions: fns, function_call: 'sometimes' },
    { functions: fns, tools: [tool('f')] },
    { functions: [{ name: 'x', parameters: { type: 'object', not: {} } }] },
    { functions: 'get_weather' },
    { functions: fns, function_call: { name: 'get_weather' } },
  ];
  return toolCase(g, 'legacy-functions', over[variant], variant === 5 ? [200] : [400]);
};

const toolMessages: Generator = (g) => {
  const call = { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"city":"Porto"}' } };
  const variants: unknown[][] = [
    [{ role: 'user', content: 'hi' }, { role: 'tool', content: 'sunny' }],
    [{ role: 'user', content: 'hi' }, { role: 'tool', tool_call_id: 5, content: 'sunny' }],
    [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_does_not_exist', content: 'x' }],
    [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [{ ...call, function: { name: 'f', arguments: '{not json' } }] }],
    [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [{ ...call, function: { name: 'f', arguments: '['.repeat(100) + ']'.repeat(100) } }] }],
    [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: 'call_1' }],
    [{ role: 'user', content: 'hi' }, { role: 'function', content: 'x' }],
    [{ role: 'assistant', content: null }],
    [{ role: 'tool', tool_call_id: 'call_1', content: { nested: true } }],
    [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, function_call: { name: 'f', arguments: 42 } }],
  ];
  const v = g.rng.int(0, variants.length - 1);
  // Variant 2: an unknown tool_call_id is rendered as the provider renders it (accepted).
  return toolCase(g, 'tool-messages', { messages: variants[v], tools: [tool('f', PARAMS)] }, v === 2 || v === 3 ? [200, 400] : [400]);
};

const withResponseFormat: Generator = (g) => toolCase(g, 'tools-and-json', { tools: [tool('f', PARAMS)], response_format: { type: 'json_object' }, tool_choice: g.rng.pick(['auto', 'required']) }, [400]);

const notInPlan: Generator = (g) => toolCase(g, 'not-in-plan', { tools: [tool('f', PARAMS)] }, [403, 429], g.rng.pick([g.keys.starter, g.keys.solo]));

const argsSchemaHostile: Generator = (g) => {
  const p = g.rng.pick<unknown>([{ type: 'object', properties: { a: { $ref: '#/nowhere' } } }, { type: 'array' }, 'object', { type: 'object', properties: { a: { type: 'string', pattern: '((a|b){1,200}c){1,200}' } }, required: ['a'] }, { type: 'object', additionalProperties: { type: 'object', additionalProperties: { type: 'integer', minimum: 1e300 } } }]);
  return toolCase(g, 'hostile-parameters', { tools: [tool('f', p)], tool_choice: 'required' }, [200, 400]);
};

export const toolGenerators: [Generator, number][] = [
  [manyTools, 3],
  [deepParams, 2],
  [duplicateNames, 1],
  [invalidNames, 2],
  [hugeDescription, 1],
  [badToolChoice, 2],
  [choiceWithoutTools, 1],
  [parallel, 1],
  [legacy, 2],
  [toolMessages, 2],
  [withResponseFormat, 1],
  [notInPlan, 1],
  [argsSchemaHostile, 2],
];
