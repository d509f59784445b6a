/** Tool-call grammars (auto / required / named, parallel or not) and the parser of their wire format. */
import { describe, expect, it } from 'vitest';
import { compileGrammar, formatToolCall, GrammarInputError, parseToolCalls, type GrammarSpec, type ToolFunction } from '../../engine/grammar/index.ts';
import { ajv, allowedTokens, randomWalk, seeded, tokenizerOf } from './helpers.ts';

const TOOLS: ToolFunction[] = [
  {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 16 }, days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { enum: ['c', 'f'] } },
      required: ['city'],
    },
  },
  { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 8 } }, required: ['zone'] } },
  { name: 'ping' },
];
const schemaOf = (name: string) => (TOOLS.find((t) => t.name === name)!.parameters ?? { type: 'object', properties: {}, additionalProperties: false }) as object;

describe('parseToolCalls', () => {
  it('splits content and calls, arguments as JSON strings', () => {
    const text = `Let me check.\n${formatToolCall('get_weather', '{"city":"Paris","days":2}')}\n${formatToolCall('ping', '{}')}`;
    expect(text).toContain('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>');
    const p = parseToolCalls(text, ['get_weather', 'ping']);
    expect(p).toEqual({ content: 'Let me check.', calls: [{ name: 'get_weather', arguments: '{"city":"Paris","days":2}' }, { name: 'ping', arguments: '{}' }] });
    expect(parseToolCalls('Just text.')).toEqual({ content: 'Just text.', calls: [] });
  });

  it('reports a call cut off by the token limit, and blocks that are not calls', () => {
    const cut = parseToolCalls('<tool_call>\n{"name": "ping", "argu');
    expect(cut.calls).toEqual([]);
    expect(cut.incomplete).toBe('<tool_call>\n{"name": "ping", "argu');
    expect(cut.error).toBe('a tool call was cut off before </tool_call>');
    expect(parseToolCalls('<tool_call>{"name": "nope", "arguments": {}}</tool_call>', ['ping']).error).toBe('a tool call names "nope", which is not among the tools');
    expect(parseToolCalls('<tool_call>{"name": "ping"}</tool_call>').error).toBe('the call of "ping" has no "arguments" object');
  });
});

describe('tool-call grammar', () => {
  it.each([
    [{ type: 'tools', tools: TOOLS, choice: 'required' }, 1, Infinity],
    [{ type: 'tools', tools: TOOLS, choice: 'required', parallel: false }, 1, 1],
    [{ type: 'tools', tools: TOOLS, choice: { name: 'get_time' } }, 1, 1],
    [{ type: 'tools', tools: TOOLS, choice: 'auto' }, 0, Infinity],
    [{ type: 'tools', tools: TOOLS, choice: 'auto', parallel: false }, 0, 1],
  ] as [GrammarSpec, number, number][])('%j: every walk parses into calls that validate (%s..%s calls)', async (spec, min, max) => {
    for (const file of ['stories260K.gguf', 'llama-2-tiny-random.gguf']) {
      const t = await tokenizerOf(file);
      const g = await compileGrammar(t, spec);
      let calls = 0;
      for (let seed = 1; seed <= 12; seed++) {
        const c = await g.createConstraint({ maxTokens: 160 });
        const { text, done } = randomWalk(c, t, seeded(seed), 160);
        const p = parseToolCalls(text, TOOLS.map((x) => x.name));
        if (spec.type === 'tools' && spec.choice === 'auto' && !text.includes('<tool_call>')) continue; // a plain answer
        expect(done, `${file} seed ${seed}: ${text}`).toBe(true);
        expect(p.error, `${file} seed ${seed}: ${text}`).toBeUndefined();
        expect(p.calls.length).toBeGreaterThanOrEqual(Math.max(min, 1));
        expect(p.calls.length).toBeLessThanOrEqual(max);
        for (const call of p.calls) {
          if (spec.type === 'tools' && typeof spec.choice === 'object') expect(call.name).toBe(spec.choice.name);
          expect(ajv.validate(schemaOf(call.name), JSON.parse(call.arguments)), `${call.name} ${call.arguments} ${JSON.stringify(ajv.errors)}`).toBe(true);
        }
        calls += p.calls.length;
      }
      if (min > 0) expect(calls).toBeGreaterThan(0);
    }
  });

  it('required starts with the call itself; auto leaves the first token free', async () => {
    const t = await tokenizerOf('llama-2-tiny-random.gguf');
    const req = await (await compileGrammar(t, { type: 'tools', tools: TOOLS, choice: 'required' })).createConstraint();
    expect(req.forcedText()).toBe('<tool_call>\n{"name": "');
    const named = await (await compileGrammar(t, { type: 'tools', tools: TOOLS, choice: { name: 'ping' } })).createConstraint();
    expect(named.forcedText()).toBe('<tool_call>\n{"name": "ping", "arguments": {}}\n</tool_call>');
    const auto = await (await compileGrammar(t, { type: 'tools', tools: TOOLS, choice: 'auto' })).createConstraint();
    // Free text: all but control tokens and bytes that cannot start a UTF-8 character.
    expect(allowedTokens(auto.mask(), t.vocabSize).length).toBeGreaterThan(t.vocabSize * 0.99);
  });

  it('refuses bad tool lists and choices with messages that say why', async () => {
    const t = await tokenizerOf('stories260K.gguf');
    const bad = (spec: GrammarSpec) => compileGrammar(t, spec).then(() => 'compiled', (e: Error) => (e instanceof GrammarInputError ? e.message : `other: ${e}`));
    expect(await bad({ type: 'tools', tools: TOOLS, choice: { name: 'nope' } })).toBe('tool_choice names "nope", which is not among the tools (get_weather, get_time, ping)');
    expect(await bad({ type: 'tools', tools: [{ name: 'a b' }], choice: 'auto' })).toBe('tools[0].function.name must be 1-64 letters, digits, "_" or "-" (got "a b")');
    expect(await bad({ type: 'tools', tools: [{ name: 'a' }, { name: 'a' }], choice: 'auto' })).toBe('tools[1].function.name "a" is used by two tools');
    expect(await bad({ type: 'tools', tools: [], choice: 'auto' })).toBe('tools must be a non-empty array of functions');
    expect(await bad({ type: 'tools', tools: TOOLS, choice: 'none' as never })).toBe('tool_choice "none" needs no grammar: generate without one');
    expect(await bad({ type: 'tools', tools: [{ name: 'f', parameters: { type: 'object', properties: { x: { type: 'integer', minimum: 3, maximum: 1 } } } }], choice: 'auto' })).toBe(
      'tools[0].function.parameters at /properties/x: no integer satisfies its bounds (minimum 3, maximum 1)',
    );
  });
});
