import { describe, expect, it } from 'vitest';
import { ApiError } from '../../protocol/errors.ts';
import { parseChatRequest } from '../../protocol/requests/chat.ts';
import { parseInferRequest } from '../../protocol/requests/infer.ts';

const base = { model: 'svc-chat', messages: [{ role: 'user', content: 'hi' }] };

function rejects(body: unknown, parse: (b: unknown) => unknown = parseChatRequest): ApiError {
  try {
    parse(body);
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    const err = e as ApiError;
    expect(err.status).toBe(400);
    expect(err.type).toBe('invalid_request_error');
    return err;
  }
  throw new Error('expected a 400');
}

describe('chat completion requests', () => {
  it('fills nothing it was not given and normalises what it was', () => {
    const r = parseChatRequest({ ...base, stop: 'END', unknown_field: 1, user: 'u1', seed: 7, max_completion_tokens: 9 });
    expect(r).toMatchObject({ model: 'svc-chat', stop: ['END'], seed: 7, maxTokens: 9, stream: false, includeUsage: false, logprobs: false });
    expect(r.temperature).toBeUndefined();
    expect(r.topP).toBeUndefined();
    expect(r.messages).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('treats null like an absent field, as provider clients send it', () => {
    const r = parseChatRequest({ ...base, max_tokens: null, temperature: null, stop: null, n: null, tools: null, response_format: null });
    expect(r.maxTokens).toBeUndefined();
    expect(r.stop).toEqual([]);
    expect(r.features).toEqual([]);
  });

  it('joins text content parts and maps developer to system', () => {
    const r = parseChatRequest({
      model: 'x',
      messages: [
        { role: 'developer', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], name: 'ann' },
      ],
    });
    expect(r.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'a\nb', name: 'ann' },
    ]);
  });

  it.each([
    [{ messages: base.messages }, 'model', "Missing required parameter: 'model'."],
    [{ model: 'svc-chat' }, 'messages', "Missing required parameter: 'messages'."],
    [{ ...base, messages: [] }, 'messages', "Invalid 'messages': must not be empty."],
    [{ ...base, messages: 'hi' }, 'messages', "Invalid 'messages': expected an array, got \"hi\"."],
    [{ ...base, messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role', 'must be one of'],
    [{ ...base, messages: [{ role: 'user' }] }, 'messages[0].content', "Missing required parameter: 'messages[0].content'."],
    [{ ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content[0].type', "only 'text' content parts are supported"],
    [{ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 3 }] }] }, 'messages[0].content[0].text', 'expected a string, got 3'],
    [{ ...base, messages: [{ role: 'user', content: 5 }] }, 'messages[0].content', 'expected a string or an array'],
    [{ ...base, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id', "Missing required parameter: 'messages[0].tool_call_id'."],
    [{ ...base, messages: [{ role: 'function', content: 'x' }] }, 'messages[0].name', "Missing required parameter: 'messages[0].name'."],
    [{ ...base, messages: [{ role: 'assistant', content: null }] }, 'messages[0].content', 'Missing required parameter'],
    [{ ...base, messages: [{ role: 'user', content: 'x', tool_calls: [] }] }, 'messages[0].tool_calls', 'only assistant messages'],
    [{ ...base, max_tokens: 4097 }, 'max_tokens', "Invalid 'max_tokens': must be at most 4096, got 4097."],
    [{ ...base, max_tokens: 0 }, 'max_tokens', 'must be at least 1, got 0'],
    [{ ...base, max_tokens: 1.5 }, 'max_tokens', 'expected an integer'],
    [{ ...base, max_tokens: '10' }, 'max_tokens', 'expected a number, got "10"'],
    [{ ...base, max_completion_tokens: 5000 }, 'max_completion_tokens', 'must be at most 4096'],
    [{ ...base, max_tokens: 5, max_completion_tokens: 6 }, 'max_completion_tokens', 'disagree'],
    [{ ...base, temperature: 2.5 }, 'temperature', 'must be at most 2, got 2.5'],
    [{ ...base, temperature: -0.1 }, 'temperature', 'must be at least 0'],
    [{ ...base, top_p: 0 }, 'top_p', 'must be greater than 0, got 0'],
    [{ ...base, top_p: 1.01 }, 'top_p', 'must be at most 1'],
    [{ ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', 'must have at most 4 items, got 5'],
    [{ ...base, stop: '' }, 'stop', 'must not be empty'],
    [{ ...base, n: 2 }, 'n', 'only n=1 is supported'],
    [{ ...base, presence_penalty: 3 }, 'presence_penalty', 'must be at most 2'],
    [{ ...base, frequency_penalty: -3 }, 'frequency_penalty', 'must be at least -2'],
    [{ ...base, seed: 1.5 }, 'seed', 'expected an integer'],
    [{ ...base, stream_options: { include_usage: true } }, 'stream_options', "only allowed when 'stream' is true"],
    [{ ...base, stream: false, stream_options: { include_usage: true } }, 'stream_options', "only allowed when 'stream' is true"],
    [{ ...base, logprobs: true, top_logprobs: 3 }, 'top_logprobs', 'only 0 is supported'],
    [{ ...base, top_logprobs: 0 }, 'top_logprobs', "needs 'logprobs'"],
    [{ ...base, logit_bias: { '50256': -100 } }, 'logit_bias', 'not supported'],
    [{ ...base, tool_choice: 'auto' }, 'tool_choice', "only allowed when 'tools'"],
    [{ ...base, response_format: { type: 'yaml' } }, 'response_format.type', 'must be one of "text", "json_object", "json_schema"'],
    [{ ...base, messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c' }] }] }, 'messages[0].tool_calls[0].function', 'Missing required parameter'],
    [{ ...base, tools: [{ type: 'function', function: { name: 'a b' } }] }, 'tools[0].function.name', 'must be 1-64 letters'],
    [{ ...base, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'always' }, 'tool_choice', 'must be one of "none", "auto", "required"'],
    [{ ...base, tools: [{ type: 'function', function: { name: 'f' } }], functions: [{ name: 'f' }] }, 'functions', 'not both'],
    [{ ...base, response_format: { type: 'json_schema' } }, 'response_format.json_schema', 'Missing required parameter'],
    [{ ...base, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: [] } } }, 'response_format.json_schema.schema', 'expected an object'],
    [{ ...base, response_format: { type: 'json_object', schema: 3 } }, 'response_format.schema', 'expected an object or a string'],
    [{ ...base, labels: 'a,b' }, 'labels', 'expected an array'],
    [{ ...base, labels: ['a', 'a'] }, 'labels', 'different'],
    [{ ...base, format: 'poem' }, 'format', 'must be one of "bullets", "prose"'],
    [{ ...base, max_words: 0 }, 'max_words', 'must be at least 1'],
    [[base], 'body', 'expected an object'],
  ])('rejects %j naming %s', (body, param, message) => {
    const err = rejects(body);
    expect(err.param).toBe(param);
    expect(err.message).toContain(message);
  });

  it('marks tools, functions and JSON response formats as plan features', () => {
    const r = parseChatRequest({ ...base, tools: [{ type: 'function', function: { name: 'f' } }], response_format: { type: 'json_schema', json_schema: { name: 'x' } } });
    expect(r.features).toEqual([
      { feature: 'functionCalling', param: 'tools' },
      { feature: 'jsonSchema', param: 'response_format' },
    ]);
    expect(parseChatRequest({ ...base, functions: [{ name: 'f' }] }).features).toEqual([{ feature: 'functionCalling', param: 'functions' }]);
    expect(parseChatRequest({ ...base, response_format: { type: 'text' } }).features).toEqual([]);
  });

  it('normalises tools and the legacy functions, and tool history into tool messages', () => {
    const tools = [{ type: 'function', function: { name: 'f', description: 'F', parameters: { type: 'object' } } }];
    expect(parseChatRequest({ ...base, tools }).tools).toEqual({ functions: [{ name: 'f', description: 'F', parameters: { type: 'object' } }], choice: 'auto', parallel: true, legacy: false });
    expect(parseChatRequest({ ...base, tools, tool_choice: { type: 'function', function: { name: 'f' } }, parallel_tool_calls: false }).tools).toMatchObject({ choice: { name: 'f' }, parallel: false });
    expect(parseChatRequest({ ...base, functions: [{ name: 'f' }], function_call: { name: 'f' } }).tools).toEqual({ functions: [{ name: 'f' }], choice: { name: 'f' }, parallel: false, legacy: true });
    const r = parseChatRequest({
      ...base,
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        { role: 'assistant', content: null, function_call: { name: 'f', arguments: '{}' } },
        { role: 'function', name: 'f', content: 'rain' },
      ],
    });
    expect(r.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
      { role: 'tool', content: 'sunny', tool_call_id: 'call_1' },
      { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', content: 'rain', name: 'f' },
    ]);
  });

  it('takes the extension fields, leaving absent ones out', () => {
    expect(parseChatRequest({ ...base, labels: ['a', 'b'], max_words: 9, context: null }).output).toEqual({ labels: ['a', 'b'], maxWords: 9 });
    expect(parseChatRequest(base).output).toEqual({});
  });

  it('accepts stream with include_usage and logprobs without alternatives', () => {
    const r = parseChatRequest({ ...base, stream: true, stream_options: { include_usage: true }, logprobs: true, top_logprobs: 0 });
    expect(r).toMatchObject({ stream: true, includeUsage: true, logprobs: true });
  });
});

describe('infer requests', () => {
  it('takes a specialist and a prompt', () => {
    expect(parseInferRequest({ specialist: 'qa', prompt: 'why?', max_tokens: 3, temperature: 0 })).toMatchObject({ specialist: 'qa', prompt: 'why?', maxTokens: 3, temperature: 0, stop: [], output: {} });
  });

  it('takes the extension fields and a conversation id', () => {
    const r = parseInferRequest({ specialist: 'chat', prompt: 'hi', conversation_id: 'c-1', labels: ['x', 'y'], format: 'prose', max_bullets: 2, schema: { type: 'object' }, context: 'c' });
    expect(r.conversationId).toBe('c-1');
    expect(r.output).toEqual({ labels: ['x', 'y'], format: 'prose', maxBullets: 2, schema: { type: 'object' }, context: 'c' });
  });

  it.each([
    [{ prompt: 'x' }, 'specialist', 'Missing required parameter'],
    [{ specialist: 'qa' }, 'prompt', 'Missing required parameter'],
    [{ specialist: 'qa', prompt: '' }, 'prompt', 'must not be empty'],
    [{ specialist: 'qa', prompt: 'x', max_tokens: 9999 }, 'max_tokens', 'must be at most 4096'],
    [{ specialist: 'qa', prompt: 'x', stream: true }, 'stream', 'not available on /v1/infer'],
    // Ours: unknown fields are named, not ignored.
    [{ specialist: 'classify', prompt: 'x', label: ['a', 'b'] }, 'label', "Unknown parameter: 'label'."],
    [{ specialist: 'qa', prompt: 'x', foo: 1, bar: 2 }, 'foo', "Unknown parameters: 'foo', 'bar'."],
    [{ specialist: 'qa', prompt: 'x', context: 3 }, 'context', 'expected a string, got 3'],
    [{ specialist: 'chat', prompt: 'x', conversation_id: 'a b' }, 'conversation_id', 'must be 1-128 characters'],
    [{ specialist: 'extract', prompt: 'x', schema: 'object' }, 'schema', 'expected an object'],
  ])('rejects %j naming %s', (body, param, message) => {
    const err = rejects(body, parseInferRequest);
    expect(err.param).toBe(param);
    expect(err.message).toContain(message);
  });
});
