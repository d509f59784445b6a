/** The pure parts of the output forms: reading tool calls as they stream, closing fences, sentences, history trimming, labels lines. */
import { describe, expect, it } from 'vitest';
import { formatToolCall } from '../../engine/grammar/index.ts';
import type { GenerationResult } from '../../engine/types.ts';
import { turnsToDrop, type ConversationTurn } from '../../protocol/conversations.ts';
import { ApiError } from '../../protocol/errors.ts';
import { closeFence, literal } from '../../protocol/guardrails/ebnf.ts';
import { contextSentences } from '../../protocol/guardrails/grounded.ts';
import { labelsFromSystem } from '../../protocol/guardrails/labels.ts';
import { assembleMessage, outputReader, type Delta } from '../../protocol/output/reader.ts';
import { toolsPlan } from '../../protocol/output/tools.ts';
import { ToolCallReader, type ToolEvent } from '../../protocol/output/tool-call-reader.ts';

const result = (finishReason: 'stop' | 'length') => ({ finishReason }) as GenerationResult;

describe('ToolCallReader', () => {
  const text = `  Let me look.\n${formatToolCall('get_weather', '{"city": "Paris \\"centre\\" {x}", "days": [1, 2]}')}\n${formatToolCall('ping', '{}')}\n`;

  /** Events merged: consecutive content and arguments pieces joined. */
  function merged(events: ToolEvent[]): ToolEvent[] {
    const out: ToolEvent[] = [];
    for (const e of events) {
      const prev = out.at(-1);
      if (prev && prev.type === e.type && e.type !== 'call' && (prev.type === 'content' || prev.index === (e as { index: number }).index)) (prev as { text: string }).text += (e as { text: string }).text;
      else out.push({ ...e });
    }
    return out;
  }

  it('reads text and calls the same whatever the pieces the text arrives in', () => {
    const whole = new ToolCallReader();
    const expected = merged([...whole.push(text), ...whole.end().events]);
    expect(expected).toEqual([
      { type: 'content', text: 'Let me look.' },
      { type: 'call', index: 0, name: 'get_weather' },
      { type: 'arguments', index: 0, text: '{"city": "Paris \\"centre\\" {x}", "days": [1, 2]}' },
      { type: 'call', index: 1, name: 'ping' },
      { type: 'arguments', index: 1, text: '{}' },
    ]);
    for (const size of [1, 2, 3, 5, 7, 13]) {
      const r = new ToolCallReader();
      const events: ToolEvent[] = [];
      for (let i = 0; i < text.length; i += size) events.push(...r.push(text.slice(i, i + size)));
      const end = r.end();
      expect(end.cutOff).toBe(false);
      expect(merged([...events, ...end.events])).toEqual(expected);
    }
  });

  it('gives back a held "<" that never became a call, and says when a call was cut off', () => {
    const r = new ToolCallReader();
    expect(r.push('a < b <tool')).toEqual([{ type: 'content', text: 'a < b' }]);
    expect(r.end()).toEqual({ events: [{ type: 'content', text: ' <tool' }], cutOff: false });
    const cut = new ToolCallReader();
    const events = cut.push('<tool_call>\n{"name": "f", "arguments": {"a": "b');
    expect(events).toEqual([
      { type: 'call', index: 0, name: 'f' },
      { type: 'arguments', index: 0, text: '{"a": "b' },
    ]);
    expect(cut.end().cutOff).toBe(true);
  });
});

describe('tool answers as provider messages', () => {
  const plan = (legacy: boolean) => toolsPlan({ functions: [{ name: 'f' }], choice: 'required', parallel: true, legacy });

  it('fold to tool_calls with null content and finish_reason tool_calls, or function_call for legacy', () => {
    const text = formatToolCall('f', '{"x": 1}');
    for (const legacy of [false, true]) {
      const reader = outputReader(plan(legacy));
      const deltas: Delta[] = [...reader.push(text.slice(0, 9)), ...reader.push(text.slice(9))];
      const end = reader.end(result('stop'));
      const message = assembleMessage([...deltas, ...end.deltas]);
      expect(message.content).toBeNull();
      if (legacy) {
        expect(end.finishReason).toBe('function_call');
        expect(message.function_call).toEqual({ name: 'f', arguments: '{"x": 1}' });
      } else {
        expect(end.finishReason).toBe('tool_calls');
        expect(message.tool_calls).toEqual([{ id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'f', arguments: '{"x": 1}' } }]);
      }
    }
  });

  it('keep the generation’s finish_reason for plain text and for a call cut off', () => {
    const text = outputReader(plan(false));
    const m = assembleMessage([...text.push('Just text.'), ...text.end(result('stop')).deltas]);
    expect(m).toEqual({ role: 'assistant', content: 'Just text.' });
    const cut = outputReader(plan(false));
    cut.push('<tool_call>\n{"name": "f", "arguments": {"x"');
    expect(cut.end(result('length')).finishReason).toBe('length');
  });
});

describe('closeFence', () => {
  it.each([
    ['```py\nprint(1)\n```', ''],
    ['```py\nprint(1)\n```\nDone.', ''],
    ['```py\nprint(1)', '\n```'],
    ['```py\nprint(1)\n', '```'],
    ['```py\nprint(1)\n`', '``'],
    ['```py\nprint(1)\n``', '`'],
    ['```py', '\n```'],
    ['```', '\n```'],
    ['```js\na\n```\ntext\n```sh\nls -la "```"', '\n```'],
  ])('%j + %j', (text, close) => {
    expect(closeFence(text)).toBe(close);
  });
});

describe('contextSentences', () => {
  it('splits at sentence ends and lines, each sentence once', () => {
    expect(contextSentences('Tom ran. Amy said "Stop!" Then?\n\nTom ran.  Done')).toEqual(['Tom ran.', 'Amy said "Stop!"', 'Then?', 'Done']);
  });
});

describe('literal', () => {
  it('escapes what an EBNF string cannot hold as it is', () => {
    expect(literal('a "b" \\ c\nd\té€😀')).toBe('"a \\"b\\" \\\\ c\\nd\\t\\u00e9\\u20ac\\U0001f600"');
  });
});

describe('turnsToDrop', () => {
  const turns: ConversationTurn[] = Array.from({ length: 8 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' }));

  it('drops the fewest whole exchanges, oldest first, that make room', () => {
    // Each turn costs 10 tokens on top of a 20-token prompt.
    const tokens = (dropped: number) => 20 + 10 * (8 - dropped);
    expect(turnsToDrop(turns, tokens, 0, 100)).toBe(0);
    expect(turnsToDrop(turns, tokens, 30, 100)).toBe(4);
    expect(turnsToDrop(turns, tokens, 10, 100)).toBe(2);
    expect(turnsToDrop(turns, tokens, 90, 100)).toBe(8);
  });
});

describe('labelsFromSystem', () => {
  it('reads the first "Labels:" line of a system message', () => {
    const set = labelsFromSystem([
      { role: 'user', content: 'Labels: not, here' },
      { role: 'system', content: 'Classify.\n  labels :  Urgent, later ,, Urgent,spam\nThanks' },
    ]);
    expect(set).toEqual({ labels: ['Urgent', 'later', 'spam'], param: 'messages[1].content' });
    expect(labelsFromSystem([{ role: 'system', content: 'No labels here.' }])).toBeUndefined();
    expect(() => labelsFromSystem([{ role: 'system', content: 'Labels: one' }])).toThrow(ApiError);
  });
});
