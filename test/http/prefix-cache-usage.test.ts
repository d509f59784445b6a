/** Chat completions report the prompt tokens the prefix cache served, where OpenAI reports prompt caching. */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let client: OpenAI;
beforeAll(async () => {
  h = await startServer({ engine: () => testEngine() });
  client = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('professional', { paid: true }) });
});
afterAll(() => h.close());

const system =
  'You tell short stories for small children. Use simple words, happy endings and names like Lily, Tom, Ben and Sue. ' +
  'Every story has a dog, a ball or a park in it, and a mom who says something kind at the end.';

describe('usage.prompt_tokens_details.cached_tokens', () => {
  it('covers little of a new system prompt, and all of it on the next request', async () => {
    const ask = (user: string) =>
      client.chat.completions.create({ model: 'svc-chat', messages: [{ role: 'system', content: system }, { role: 'user', content: user }], max_tokens: 8, temperature: 0 });
    const first = await ask('Once upon a time');
    // At most the chat template's opening, which earlier requests to this engine share (token by token).
    expect(first.usage!.prompt_tokens_details!.cached_tokens).toBeLessThan(16);
    const second = await ask('The little dog');
    const cached = second.usage!.prompt_tokens_details!.cached_tokens!;
    expect(cached).toBeGreaterThan(100);
    expect(cached).toBeLessThan(second.usage!.prompt_tokens);
    // Streamed with include_usage: the same field in the last chunk.
    const stream = await client.chat.completions.create({ model: 'svc-chat', messages: [{ role: 'system', content: system }, { role: 'user', content: 'One day' }], max_tokens: 4, temperature: 0, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(100);
  });
});
