/** Chat messages → prompt tokens: the model's template when it has one, else the fallback format. */
import type { Tokenizer } from '../tokenizer/types.ts';
import { EngineInputError } from '../types.ts';
import { FALLBACK_STOP, renderFallback } from './fallback.ts';
import { renderTemplate } from './template.ts';
import type { ChatMessage, ChatTool, RenderedChat } from './types.ts';

export interface ChatModel {
  tokenizer: Tokenizer;
  /** tokenizer.chat_template from the GGUF (ModelInfo.chatTemplate). */
  chatTemplate?: string;
}

export interface RenderChatOptions {
  /** Tools to describe to the model (omit for tool_choice "none" if they should not be shown). */
  tools?: readonly ChatTool[];
  /** End with the opening of the assistant's turn (default true). */
  addGenerationPrompt?: boolean;
  /** A template to use instead of the model's (a user-supplied one, say). */
  template?: string;
  /**
   * Refuse (PromptTooLongError) rendered text longer than this before tokenizing it: text that cannot
   * fit the context window is not worth the tokenizer's time (tools and template text count too).
   */
  maxChars?: number;
}

/** The rendered prompt is longer than RenderChatOptions.maxChars: it was not tokenized. */
export class PromptTooLongError extends EngineInputError {
  constructor(
    readonly chars: number,
    readonly maxChars: number,
  ) {
    super(`the rendered prompt has ${chars} characters, more than the ${maxChars} allowed`, 'messages');
    this.name = 'PromptTooLongError';
  }
}

function checkLength(text: string, maxChars: number | undefined): string {
  if (maxChars !== undefined && text.length > maxChars) throw new PromptTooLongError(text.length, maxChars);
  return text;
}

export function renderChat(model: ChatModel, messages: readonly ChatMessage[], opts: RenderChatOptions = {}): RenderedChat {
  if (!Array.isArray(messages) || messages.length === 0) throw new EngineInputError('messages must be a non-empty array', 'messages');
  const addGenerationPrompt = opts.addGenerationPrompt ?? true;
  const t = model.tokenizer;
  const source = opts.template ?? model.chatTemplate;
  if (source) {
    const bosToken = t.bos !== undefined ? t.tokenText(t.bos) : '';
    const eosToken = t.eos !== undefined ? t.tokenText(t.eos) : '';
    const text = checkLength(renderTemplate(source, { messages, tools: opts.tools, addGenerationPrompt, bosToken, eosToken }), opts.maxChars);
    return { text, tokens: encodeRendered(t, text, 'template'), stop: [], format: 'template' };
  }
  const text = checkLength(renderFallback(messages, opts.tools, addGenerationPrompt), opts.maxChars);
  return { text, tokens: encodeRendered(t, text, 'fallback'), stop: [...FALLBACK_STOP], format: 'fallback' };
}

/**
 * Tokens of rendered chat text, as renderChat makes them. Exported so training data (engine/train/render.ts)
 * tokenizes prefixes of a conversation exactly as serving tokenizes a prompt.
 */
export function encodeRendered(t: Tokenizer, text: string, format: RenderedChat['format']): number[] {
  // Fallback text is the user's text: control-token look-alikes in it stay text.
  if (format === 'fallback') return t.encode(text);
  // Templates that write bos_token themselves must not get a second one from the tokenizer.
  const bosToken = t.bos !== undefined ? t.tokenText(t.bos) : '';
  const hasBos = bosToken !== '' && text.startsWith(bosToken);
  return t.encode(text, { addBos: t.addBos && !hasBos, parseSpecial: true });
}
