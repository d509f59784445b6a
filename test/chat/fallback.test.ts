/** The fallback chat format, for models without a template (all the test models). */
import { describe, expect, it } from 'vitest';
import { FALLBACK_STOP, renderChat, TOOLS_INTRO, type ChatMessage } from '../../engine/chat/index.ts';
import { parseToolCalls } from '../../engine/grammar/index.ts';
import { EngineInputError } from '../../engine/types.ts';
import { testEngine } from '../helpers/engine.ts';
import { modelTokenizer } from '../tokenizer/load.ts';

describe('fallback chat format', () => {
  it('headed blocks, the assistant block left open, and the stop string that ends the turn', async () => {
    const t = await modelTokenizer('stories260K.gguf');
    const r = renderChat({ tokenizer: t }, [
      { role: 'system', content: 'You tell stories.' },
      { role: 'user', content: 'Tell me about a dog.', name: 'Tim' },
    ]);
    expect(r.format).toBe('fallback');
    expect(r.text).toBe('### System:\nYou tell stories.\n\n### User (Tim):\nTell me about a dog.\n\n### Assistant:\n');
    expect(r.stop).toEqual(['\n### ']);
    expect(r.stop).toEqual([...FALLBACK_STOP]);
    expect(r.tokens[0]).toBe(t.bos);
    expect(t.decode(r.tokens)).toBe(` ${r.text}`); // SentencePiece: the space prefix stays after BOS
  });

  it('tools, earlier calls in the wire format, and tool results', async () => {
    const t = await modelTokenizer('stories260K.gguf');
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
    ];
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const r = renderChat({ tokenizer: t }, messages, { tools });
    expect(r.text).toBe(
      `### Tools:\n${TOOLS_INTRO}\n{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}\n\n` +
        '### User:\nWeather?\n\n' +
        '### Assistant:\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n\n' +
        '### Tool (get_weather):\nsunny\n\n### Assistant:\n',
    );
    // What the format shows as a call is what the parser reads back.
    expect(parseToolCalls(r.text.split('### Assistant:\n')[1]).calls).toEqual([{ name: 'get_weather', arguments: '{"city":"Paris"}' }]);
  });

  it('refuses what it cannot render, naming the message', async () => {
    const t = await modelTokenizer('stories260K.gguf');
    expect(() => renderChat({ tokenizer: t }, [])).toThrow(new EngineInputError('messages must be a non-empty array', 'messages'));
    expect(() => renderChat({ tokenizer: t }, [{ role: 'user', content: [{ type: 'image_url' } as never] }])).toThrow(
      'messages[0].content[0] is a "image_url" part; only text parts are supported',
    );
    expect(() => renderChat({ tokenizer: t }, [{ role: 'robot', content: 'x' } as never])).toThrow('messages[0].role must be system, developer, user, assistant or tool');
  });

  it('a story model continues the open assistant block with prose, and the stop string ends its turn', async () => {
    const engine = await testEngine();
    const r = renderChat({ tokenizer: engine.tokenizer }, [{ role: 'user', content: 'Tell me a story about a cat.' }]);
    const out = await engine.generate({ tokens: r.tokens, stop: r.stop, maxTokens: 60, temperature: 0 }).result;
    expect(out.text.length).toBeGreaterThan(20);
    expect(out.text).toMatch(/[a-z]+ [a-z]+/i);
    expect(out.text).not.toContain('### ');
  });
});
