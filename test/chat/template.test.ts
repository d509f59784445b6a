/** Real chat templates through @huggingface/jinja, with a real tokenizer for the prompt tokens. */
import { describe, expect, it } from 'vitest';
import { ChatTemplateError, renderChat, type ChatMessage } from '../../engine/chat/index.ts';
import { EngineInputError } from '../../engine/types.ts';
import { modelTokenizer } from '../tokenizer/load.ts';
import { CHATML, LLAMA2, LLAMA3, QWEN25_TOOLS } from './templates.ts';

const llama2Vocab = () => modelTokenizer('llama-2-tiny-random.gguf');

const CHAT: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello!' },
  { role: 'user', content: [{ type: 'text', text: 'How ' }, { type: 'text', text: 'are you?' }] },
];

describe('chat templates', () => {
  it('ChatML', async () => {
    const r = renderChat({ tokenizer: await llama2Vocab(), chatTemplate: CHATML }, CHAT);
    expect(r.format).toBe('template');
    expect(r.text).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(r.stop).toEqual([]);
  });

  it('Llama 3: bos_token written by the template is not added again', async () => {
    const t = await llama2Vocab();
    const r = renderChat({ tokenizer: t, chatTemplate: LLAMA3 }, CHAT.slice(1, 2));
    expect(r.text).toBe('<s><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n');
    expect(r.tokens[0]).toBe(t.bos);
    expect(r.tokens[1]).not.toBe(t.bos);
    expect(r.tokens.filter((x) => x === t.bos)).toHaveLength(1);
    // As llama.cpp tokenizes it: SentencePiece's space prefix goes to the text after the BOS token.
    expect(t.decode(r.tokens)).toBe(` ${r.text.slice('<s>'.length)}`);
  });

  it('Llama 2: system folded into the first turn; raise_exception for a bad role order is a 400', async () => {
    const t = await llama2Vocab();
    const r = renderChat({ tokenizer: t, chatTemplate: LLAMA2 }, CHAT);
    expect(r.text).toBe('<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] How are you? [/INST]');
    // Each <s> and </s> is its control token, not the text.
    expect(r.tokens.filter((x) => x === t.bos)).toHaveLength(2);
    expect(r.tokens.filter((x) => x === t.eos)).toHaveLength(1);
    const bad: ChatMessage[] = [
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ];
    expect(() => renderChat({ tokenizer: t, chatTemplate: LLAMA2 }, bad)).toThrow(ChatTemplateError);
    try {
      renderChat({ tokenizer: t, chatTemplate: LLAMA2 }, bad);
    } catch (e) {
      expect(e).toBeInstanceOf(EngineInputError);
      expect((e as EngineInputError).param).toBe('messages');
      expect((e as Error).message).toBe("the model's chat template refused the messages: Conversation roles must alternate user/assistant/user/assistant/...");
    }
  });

  it('Qwen 2.5 with tools: tools listed, earlier calls and tool results rendered', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '{"temp": 21}' },
    ];
    const r = renderChat({ tokenizer: await llama2Vocab(), chatTemplate: QWEN25_TOOLS }, messages, { tools });
    expect(r.text).toContain(
      '<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}\n</tools>',
    );
    expect(r.text).toContain('<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n');
    expect(r.text).toContain('<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n');
    expect(r.text.endsWith('<|im_start|>assistant\n')).toBe(true);
    // Without tools the same template takes its other branch.
    expect(renderChat({ tokenizer: await llama2Vocab(), chatTemplate: QWEN25_TOOLS }, messages.slice(0, 1)).text).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('a broken template is our problem (not a 400), and says so', async () => {
    const tokenizer = await llama2Vocab();
    expect(() => renderChat({ tokenizer, chatTemplate: '{% for m in messages %}' }, CHAT)).toThrow(/^the model's chat template cannot be parsed: /);
    try {
      renderChat({ tokenizer, chatTemplate: '{% for m in messages %}' }, CHAT);
    } catch (e) {
      expect(e).not.toBeInstanceOf(EngineInputError);
    }
  });
});
