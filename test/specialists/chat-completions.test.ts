/**
 * The specialists through chat completions and the official client: the same guardrails as /v1/infer,
 * labels from a `Labels:` line or the `labels` field, and classify's confidence on the choice.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { contextSentences } from '../../protocol/guardrails/grounded.ts';
import { quoted, specialistServer, STORY } from './helpers.ts';

const server = specialistServer();
const client = () => new OpenAI({ baseURL: server.h().baseURL, apiKey: server.key(), maxRetries: 0 });

type WithConfidence = OpenAI.ChatCompletion.Choice & { confidence?: number };
/** Our extension fields, sent as the SDK sends any extra body field. */
type Extended = OpenAI.ChatCompletionCreateParamsNonStreaming & Record<string, unknown>;

describe('classify', () => {
  it('takes labels from a "Labels:" line in a system message', async () => {
    const labels = ['urgent', 'normal', 'spam'];
    for (const [i, text] of ['The server is down!', 'Lunch at noon?', 'You won a prize, click here'].entries()) {
      const r = await client().chat.completions.create({
        model: 'svc-classify',
        messages: [
          { role: 'system', content: 'Route support email.\nLabels: urgent, normal , spam,\nBe strict.' },
          { role: 'user', content: text },
        ],
        temperature: i % 2,
        seed: i,
      });
      const c = r.choices[0] as WithConfidence;
      expect(labels).toContain(c.message.content);
      expect(c.finish_reason).toBe('stop');
      expect(c.confidence).toBeGreaterThan(0);
      expect(c.confidence).toBeLessThanOrEqual(1);
    }
  });

  it('takes the labels field, and confidence is exp of the summed logprobs of the label’s tokens', async () => {
    const labels = ['cat', 'dog', 'bird', 'fish'];
    const r = await client().chat.completions.create({ model: 'svc-classify', messages: [{ role: 'user', content: 'It barks.' }], labels, logprobs: true, temperature: 1, seed: 3 } as Extended);
    const c = r.choices[0] as WithConfidence;
    expect(labels).toContain(c.message.content);
    const sum = c.logprobs!.content!.reduce((s, t) => s + t.logprob, 0);
    expect(c.confidence).toBeCloseTo(Math.exp(sum), 6);
    expect(c.logprobs!.content!.map((t) => t.token).join('')).toBe(c.message.content);
  });

  it('streams the label, with the confidence on the last choice chunk', async () => {
    const stream = await client().chat.completions.create({ model: 'svc-classify', messages: [{ role: 'user', content: 'Great!' }], stream: true } as OpenAI.ChatCompletionCreateParamsStreaming);
    let text = '';
    let last: (OpenAI.ChatCompletionChunk.Choice & { confidence?: number }) | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.choices[0]?.finish_reason) last = chunk.choices[0];
    }
    expect(['positive', 'negative', 'neutral']).toContain(text);
    expect(last!.confidence).toBeGreaterThan(0);
  });

  it('400s a Labels: line that is not a label set, naming the message', async () => {
    const err = await client()
      .chat.completions.create({ model: 'svc-classify', messages: [{ role: 'system', content: 'Labels: only-one' }, { role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages[0].content');
    expect((err as Error).message).toContain('must have at least 2 items');
  });
});

describe('the other specialists', () => {
  it('summarise answers bullets; format prose one paragraph', async () => {
    const bullets = await client().chat.completions.create({ model: 'svc-summarise', messages: [{ role: 'user', content: STORY }], max_tokens: 40, max_bullets: 3 } as Extended);
    const lines = bullets.choices[0].message.content!.split('\n');
    expect(lines.length).toBeLessThanOrEqual(3);
    for (const l of lines) expect(l).toMatch(/^- \S/);
    const prose = await client().chat.completions.create({ model: 'svc-summarise', messages: [{ role: 'user', content: STORY }], max_tokens: 40, format: 'prose', max_words: 8 } as Extended);
    expect(prose.choices[0].message.content!.split(' ').length).toBeLessThanOrEqual(8);
    expect(prose.choices[0].message.content).not.toContain('\n');
  });

  it('extract answers a JSON object without any response_format', async () => {
    const r = await client().chat.completions.create({ model: 'svc-extract', messages: [{ role: 'user', content: STORY }], max_tokens: 60 });
    expect(JSON.parse(r.choices[0].message.content!)).toBeTypeOf('object');
  });

  it('qa quotes the context field, or the caller’s own messages without it', async () => {
    const withField = await client().chat.completions.create({ model: 'svc-qa', messages: [{ role: 'user', content: 'Who helped Tom?' }], context: STORY, max_tokens: 80, temperature: 1, seed: 2 } as Extended);
    const sentences = contextSentences(STORY);
    const answer = withField.choices[0].message.content!;
    expect(answer === 'The context does not contain the answer.' || quoted(answer, sentences), answer).toBe(true);
    const fromMessages = await client().chat.completions.create({
      model: 'svc-qa',
      messages: [
        { role: 'system', content: STORY },
        { role: 'user', content: 'Who helped Tom?' },
      ],
      max_tokens: 80,
    });
    const a = fromMessages.choices[0].message.content!;
    expect(a === 'The context does not contain the answer.' || quoted(a, contextSentences(`${STORY}\nWho helped Tom?`)), a).toBe(true);
  });

  it('code streams a fenced block, closed even when max_tokens cuts it off', async () => {
    const stream = client().chat.completions.stream({
      model: 'svc-code',
      messages: [{ role: 'user', content: 'Reverse a string in Python.' }],
      max_tokens: 15,
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    const text = final.choices[0].message.content!;
    expect(text.startsWith('```')).toBe(true);
    expect(text.split('\n').filter((l) => l.startsWith('```'))).toHaveLength(2);
    // The grammar closed the block within the budget: complete in its form, so `stop`.
    expect(final.choices[0].finish_reason).toBe('stop');
    expect(final.usage!.completion_tokens).toBeLessThanOrEqual(15);
  });
});
