/** Sizes and ranges: huge prompts, message counts, stop strings, numeric parameters, nesting, body size. */
import { CHAT, chatBody, INFER, inferBody, post, req, type Generator } from '../cases.ts';

const MIB = 1024 * 1024;

const hugePrompt: Generator = (g) => {
  const len = g.rng.logInt(20_000, 1_000_000);
  const infer = g.rng.bool(0.3);
  const unit = g.rng.pick(['a', 'word ', 'é', '😀 ']);
  // Always past the character bound (14336 for stories260K), so it is refused before tokenizing.
  const text = unit.repeat(Math.ceil(len / unit.length)).slice(0, len);
  const body = infer ? inferBody(g.rng.pick(['chat', 'summarise', 'classify']), { prompt: text }) : chatBody({ messages: [{ role: 'user', content: text }] });
  return req('sizes', `sizes/huge-prompt${infer ? '-infer' : ''}`, post(infer ? INFER : CHAT, body, g.keys.main), [400, 413]);
};

const manyMessages: Generator = (g) => {
  // Mostly over the 1024 limit; a few short conversations that are accepted (long ones cost minutes of prefill here).
  const n = g.rng.bool(0.85) ? g.rng.logInt(1025, 5000) : g.rng.int(20, 60);
  const messages = Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: g.rng.word() }));
  messages.push({ role: 'user', content: 'and?' });
  return req('sizes', 'sizes/many-messages', post(CHAT, chatBody({ messages }), g.keys.main), n >= 1024 ? [400] : [200, 400]);
};

const stops: Generator = (g) => {
  const v = g.rng.int(0, 4);
  const stop = [
    'x'.repeat(g.rng.logInt(1025, 200_000)),
    Array.from({ length: 100 }, () => g.rng.word()),
    ['a', ''],
    [1, 2],
    Array.from({ length: 4 }, () => 'y'.repeat(1024)),
  ][v];
  return req('sizes', 'sizes/stop', post(CHAT, chatBody({ stop }), g.keys.main), v === 4 ? [200] : [400]);
};

/** A parameter with a hostile value, as JSON text so 1e999 and friends go out unchanged. */
const PARAM_VALUES: Record<string, string[]> = {
  max_tokens: ['1e9', '-1', '0', '2.5', '"8"', 'true', '[]', '4097', '9007199254740993', '1e999', '-0', '{}'],
  max_completion_tokens: ['0', '4097', '3'],
  temperature: ['-1', '2.0001', '1e308', '"hot"', '-0.0000001', '[0]'],
  top_p: ['0', '1.5', '-1', '"1"'],
  n: ['2', '0', '-1', '1.5', '100', '"1"'],
  logprobs: ['"yes"', '1', '[]', '{}'],
  top_logprobs: ['5', '-1', '1.5', '21'],
  presence_penalty: ['3', '-2.5', '"0"'],
  frequency_penalty: ['1e300', '-1e300'],
  seed: ['1.5', '1e30', '"42"', '-9007199254740993'],
  logit_bias: ['{"1":100}', '[]', '"x"'],
  stream_options: ['{"include_usage":true}', '5'],
  user: ['5', '{}'],
  messages: ['[]', '{}', '"hi"', 'null', '[null]', '[{"role":"user"}]', '[{"role":"wizard","content":"x"}]', '[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]', '[{"role":"user","content":5}]'],
  model: ['""', '"gpt-5"', '5', 'null', '"svc-"', '"svc-../../etc"', `"${'m'.repeat(5000)}"`],
};

const params: Generator = (g) => {
  const name = g.rng.pick(Object.keys(PARAM_VALUES));
  const value = g.rng.pick(PARAM_VALUES[name]);
  const base = JSON.stringify(chatBody({ [name]: 0 }));
  // Replace the placeholder value with the raw JSON text (1e999 and 9007199254740993 survive this way).
  const text = base.replace(`"${name}":0`, `"${name}":${value}`);
  // Every value is out of range or of the wrong type (max_completion_tokens differs from max_tokens 4).
  return req('sizes', `sizes/param-${name}`, post(CHAT, text, g.keys.main), name === 'model' ? [400, 404] : [400]);
};

const deepBody: Generator = (g) => {
  const depth = g.rng.logInt(65, 100_000);
  const text = `{"model":"svc-chat","messages":[{"role":"user","content":"x"}],"x":${'['.repeat(depth)}${']'.repeat(depth)}}`;
  return req('sizes', 'sizes/deep-body', post(CHAT, text, g.keys.main), [400, 413]);
};

const overLimit: Generator = (g) => {
  const v = g.rng.int(0, 2);
  if (v === 0) {
    const len = MIB + g.rng.int(1, 200_000);
    return req('sizes', 'sizes/body-over-1MiB', post(CHAT, JSON.stringify(chatBody({ x: 'z'.repeat(len) })), g.keys.main), [413]);
  }
  if (v === 1) {
    // Declares a huge body and sends a small one: refused by the declared length, at once.
    const r = post(CHAT, JSON.stringify(chatBody()), g.keys.main, [['Content-Length', String(g.rng.pick([MIB + 1, 1e12, 2 ** 53]))]]);
    return req('sizes', 'sizes/declared-too-large', { ...r, timeoutMs: 15_000 }, [413, 400]);
  }
  // Chunked, no length declared: counted as it arrives.
  const body = Buffer.from(JSON.stringify(chatBody({ x: 'q'.repeat(MIB + 10) })));
  const chunks: Buffer[] = [];
  for (let at = 0; at < body.length; at += 65536) {
    const part = body.subarray(at, at + 65536);
    chunks.push(Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from('0\r\n\r\n'));
  return req('sizes', 'sizes/chunked-over-1MiB', { method: 'POST', path: CHAT, headers: [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked'], ['Authorization', `Bearer ${g.keys.main}`]], body: Buffer.concat(chunks), contentLength: false }, [413]);
};

const labels: Generator = (g) => {
  const v = g.rng.int(0, 6);
  const many = Array.from({ length: g.rng.logInt(101, 20_000) }, (_, i) => `l${i}`);
  const value = [many, ['x'.repeat(g.rng.logInt(101, 100_000)), 'b'], ['a'], ['a', 'a'], ['a\nb', 'c'], [1, 2], 'a,b'][v];
  const infer = g.rng.bool();
  const body = infer ? inferBody('classify', { labels: value }) : chatBody({ model: 'svc-classify', labels: value });
  return req('sizes', 'sizes/labels', post(infer ? INFER : CHAT, body, g.keys.main), [400]);
};

const conversationId: Generator = (g) => {
  const id = g.rng.pick(['c'.repeat(g.rng.logInt(129, 500_000)), 'a b', '../../x', '', 'ü', 'id\u0000']);
  return req('sizes', 'sizes/conversation-id', post(INFER, inferBody('chat', { conversation_id: id }), g.keys.main), [400, 413]);
};

const extensions: Generator = (g) => {
  const over = g.rng.pick<Record<string, unknown>>([
    { max_words: 5000 },
    { max_bullets: 0 },
    { max_bullets: 51 },
    { format: 'haiku' },
    { format: 'prose', max_bullets: 3 },
    { context: 5 },
    { labels: ['a', 'b'] },
    { schema: { type: 'object' } },
  ]);
  return req('sizes', 'sizes/extension-fields', post(INFER, inferBody('summarise', over), g.keys.main), [400]);
};

export const sizeGenerators: [Generator, number][] = [
  [hugePrompt, 2],
  [manyMessages, 2],
  [stops, 2],
  [params, 6],
  [deepBody, 2],
  [overLimit, 2],
  [labels, 2],
  [conversationId, 1],
  [extensions, 1],
];
