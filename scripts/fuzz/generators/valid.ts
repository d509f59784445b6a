/**
 * Valid small generations (max_tokens ≤ 8) for every specialist, whole and streamed, so the model does real
 * work throughout the run and the report shows the service kept answering.
 */
import { CHAT, chatBody, INFER, inferBody, post, req, type Case, type Generator, type Outcome } from '../cases.ts';
import { errorCode, exchange, type Target } from '../raw-http.ts';

export const SPECIALISTS = ['classify', 'summarise', 'extract', 'qa', 'chat', 'code'] as const;

export const EXTRAS_FOR_CHECK: Record<string, Record<string, unknown>> = {
  classify: { labels: ['praise', 'complaint', 'question'] },
  summarise: { max_bullets: 2, max_words: 10 },
  extract: { schema: { type: 'object', properties: { city: { type: 'string', maxLength: 6 } }, required: ['city'] } },
  qa: { context: 'The ball was red. It rolled into the pond.' },
  chat: {},
  code: {},
};

const infer: Generator = (g) => {
  const s = g.rng.pick(SPECIALISTS);
  const over: Record<string, unknown> = { max_tokens: g.rng.int(1, 8), ...(g.rng.bool() ? EXTRAS_FOR_CHECK[s] : {}) };
  if (s === 'chat' && g.rng.bool(0.3)) over.conversation_id = `fuzz-${g.rng.int(0, 20)}`;
  return req('valid', `valid/infer-${s}`, post(INFER, inferBody(s, over), g.keys.main), [200]);
};

/** A streamed or whole chat completion; a stream must end with [DONE]. */
const chat: Generator = (g) => {
  const s = g.rng.pick(SPECIALISTS);
  const stream = g.rng.bool();
  const over: Record<string, unknown> = { model: g.rng.pick([`svc-${s}`, s]), max_tokens: g.rng.int(1, 8), ...(g.rng.bool() ? EXTRAS_FOR_CHECK[s] : {}) };
  if (stream) over.stream = true;
  if (stream && g.rng.bool()) over.stream_options = { include_usage: true };
  if (g.rng.bool(0.2)) over.logprobs = true;
  if (g.rng.bool(0.2)) over.seed = g.rng.int(0, 1000);
  const request = post(CHAT, chatBody(over), g.keys.main);
  if (!stream) return req('valid', `valid/chat-${s}`, request, [200]);
  const c: Case = {
    category: 'valid',
    name: `valid/chat-${s}-stream`,
    exchanges: 1,
    expect: [200],
    run: async (t: Target): Promise<Outcome[]> => {
      const r = await exchange(t, { ...request, timeoutMs: 60_000 });
      const text = r.body.toString('utf8');
      const problem = r.status === 200 && !text.includes('data: [DONE]') ? 'stream ended without [DONE]' : undefined;
      return [{ status: r.status, code: errorCode(r.body), ms: r.ms, ...(problem ? { problem } : {}) }];
    },
  };
  return c;
};

const toolCall: Generator = (g) => {
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 5 } }, required: ['city'] } } }];
  return req('valid', 'valid/tool-call', post(CHAT, chatBody({ tools, tool_choice: g.rng.pick(['required', 'auto', { type: 'function', function: { name: 'get_weather' } }]), max_tokens: 8 }), g.keys.main), [200]);
};

const reads: Generator = (g) => req('valid', 'valid/models-usage-health', { method: 'GET', path: g.rng.pick(['/v1/models', '/v1/usage', '/health', '/v1/models/svc-qa']), headers: [['Authorization', `Bearer ${g.keys.main}`]] }, [200]);

export const validGenerators: [Generator, number][] = [
  [infer, 3],
  [chat, 4],
  [toolCall, 1],
  [reads, 1],
];
