/**
 * A model's own chat template (tokenizer.chat_template, Jinja) rendered with @huggingface/jinja, the way
 * transformers' apply_chat_template calls it: messages, tools, bos_token, eos_token,
 * add_generation_prompt, and raise_exception for the template to refuse a conversation.
 */
import { Template } from '@huggingface/jinja';
import { LruCache } from '../grammar/lru.ts';
import { EngineInputError } from '../types.ts';
import { contentText } from './content.ts';
import type { ChatMessage, ChatTool } from './types.ts';

/** The template refused the conversation (raise_exception): the caller's messages are at fault. */
export class ChatTemplateError extends EngineInputError {
  constructor(message: string) {
    super(message, 'messages');
    this.name = 'ChatTemplateError';
  }
}

const parsed = new LruCache<string, Template>(16);

/**
 * @huggingface/jinja defines raise_exception itself (as a plain Error, indistinguishable from a broken
 * template) and refuses a second definition, so templates call ours under another name.
 */
const RAISE = 'svc_raise_exception';

function compile(source: string): Template {
  let t = parsed.get(source);
  if (!t) {
    try {
      t = new Template(source.replace(/\braise_exception(\s*\()/g, `${RAISE}$1`));
    } catch (e) {
      throw new Error(`the model's chat template cannot be parsed: ${(e as Error).message}`);
    }
    parsed.set(source, t);
  }
  return t;
}

export interface TemplateInput {
  messages: readonly ChatMessage[];
  tools?: readonly ChatTool[];
  addGenerationPrompt: boolean;
  bosToken: string;
  eosToken: string;
}

export function renderTemplate(source: string, input: TemplateInput): string {
  const template = compile(source);
  const messages = input.messages.map((m, i) => templateMessage(m, i));
  try {
    return template.render({
      messages,
      ...(input.tools && input.tools.length > 0 ? { tools: input.tools } : {}),
      add_generation_prompt: input.addGenerationPrompt,
      bos_token: input.bosToken,
      eos_token: input.eosToken,
      [RAISE]: (message: unknown) => {
        throw new ChatTemplateError(`the model's chat template refused the messages: ${String(message)}`);
      },
    });
  } catch (e) {
    if (e instanceof ChatTemplateError) throw e;
    throw new Error(`the model's chat template failed: ${(e as Error).message}`);
  }
}

/**
 * A message as templates expect it (transformers' convention): content as a string, and tool-call
 * arguments as an object, since templates write them with `| tojson`.
 */
function templateMessage(m: ChatMessage, i: number): Record<string, unknown> {
  const where = `messages[${i}]`;
  const out: Record<string, unknown> = { role: m.role, content: contentText(m.content, where) };
  if (m.name !== undefined) out.name = m.name;
  if (m.role === 'tool' && m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  if (m.role === 'assistant' && m.tool_calls && m.tool_calls.length > 0) {
    out.tool_calls = m.tool_calls.map((c) => ({
      ...(c.id !== undefined ? { id: c.id } : {}),
      type: 'function',
      function: { name: c.function.name, arguments: parseArguments(c.function.arguments) },
    }));
  }
  return out;
}

function parseArguments(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return json; // a template then shows the text as it is
  }
}
