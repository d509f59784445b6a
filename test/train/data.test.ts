/** The chat fine-tuning JSONL check: every bad line named with its number, good lines kept with theirs. */
import { describe, expect, it } from 'vitest';
import { describeProblems, validateTrainingJsonl } from '../../engine/train/data.ts';

const good = (user: string, reply: string) => JSON.stringify({ messages: [{ role: 'user', content: user }, { role: 'assistant', content: reply }] });

describe('validateTrainingJsonl', () => {
  it('keeps good conversations with their line numbers, skipping blank lines and CRLF endings', () => {
    const text = [good('a', 'Label: a'), '', good('b', 'Label: b') + '\r', JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'text', text: 'c' }, { type: 'text', text: 'd' }] }, { role: 'assistant', content: 'x', weight: 1 }] })].join('\n');
    const r = validateTrainingJsonl(text);
    expect(r.problems).toEqual([]);
    expect(r.lines).toBe(3);
    expect(r.conversations).toEqual([
      { line: 1, messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'Label: a' }] },
      { line: 3, messages: [{ role: 'user', content: 'b' }, { role: 'assistant', content: 'Label: b' }] },
      { line: 4, messages: [{ role: 'user', content: 'cd' }, { role: 'assistant', content: 'x', weight: 1 }] },
    ]);
  });

  it('reports every bad line with its number and what is wrong with it', () => {
    const lines = [
      good('ok', 'fine'), // 1
      '{"messages": [', // 2: not JSON
      JSON.stringify({ messages: [] }), // 3
      JSON.stringify({ messages: [{ role: 'robot', content: 'x' }] }), // 4
      JSON.stringify({ messages: [{ role: 'user', content: 'only a question' }] }), // 5
      JSON.stringify({ messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a', weight: 0 }] }), // 6
      JSON.stringify({ messages: [{ role: 'user', content: 5 }, { role: 'assistant', content: 'a' }] }), // 7
      JSON.stringify({ prompt: 'x', completion: 'y' }), // 8
      JSON.stringify({ messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a', weight: 2 }] }), // 9
    ];
    const r = validateTrainingJsonl(lines.join('\n'));
    expect(r.conversations.map((c) => c.line)).toEqual([1]);
    expect(r.problems.map((p) => p.line)).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    const text = describeProblems(r);
    expect(text.split('\n')).toHaveLength(8);
    expect(text).toMatch(/^line 2: not valid JSON/m);
    expect(text).toMatch(/^line 3: messages: messages must not be empty$/m);
    expect(text).toMatch(/^line 4: messages\.0\.role: role must be "system", "user" or "assistant"$/m);
    expect(text).toMatch(/^line 5: messages: no assistant message to learn from$/m);
    expect(text).toMatch(/^line 6: messages: every assistant message has weight 0/m);
    expect(text).toMatch(/^line 7: messages\.0\.content: content must be a string or an array of text parts$/m);
    expect(text).toMatch(/^line 8: messages: /m);
    expect(text).toMatch(/^line 9: messages\.1\.weight: /m);
  });

  it('lists the first problems and counts the rest; refuses an empty file and over-long lines', () => {
    const many = Array.from({ length: 30 }, (_, i) => `bad ${i}`).join('\n');
    const r = validateTrainingJsonl(many, { maxLineBytes: 1000, maxLines: 100, maxMessages: 8, maxProblems: 5 });
    expect(r.problems.map((p) => p.line)).toEqual([1, 2, 3, 4, 5]);
    expect(r.moreProblems).toBe(25);
    expect(describeProblems(r).split('\n').at(-1)).toBe('and 25 more problem(s)');
    expect(validateTrainingJsonl('\n \n').problems).toEqual([{ line: 1, message: 'the file has no conversations' }]);
    const long = validateTrainingJsonl(good('x'.repeat(200), 'y'), { maxLineBytes: 100, maxLines: 10, maxMessages: 8, maxProblems: 5 });
    expect(long.problems).toEqual([{ line: 1, message: 'line is longer than 100 bytes' }]);
    const tooMany = validateTrainingJsonl([good('a', 'b'), good('c', 'd'), good('e', 'f')].join('\n'), { maxLineBytes: 1000, maxLines: 2, maxMessages: 8, maxProblems: 5 });
    expect(tooMany.problems).toEqual([{ line: 3, message: 'the file has more than 2 conversations' }]);
  });
});
