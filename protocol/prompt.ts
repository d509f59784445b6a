/**
 * Chat messages → prompt text. The test models have no chat template, so every model gets this
 * documented fallback for now; `@huggingface/jinja` templates (engine/chat/) replace it behind this one
 * function when a model brings `tokenizer.chat_template`.
 *
 * Fallback format (blocks separated by a blank line; the assistant block is left open):
 *
 *     ### System:
 *     You are a helpful assistant.
 *
 *     ### User:
 *     Hello
 *
 *     ### Assistant:
 *
 * Generation stops at "\n### " so the model does not write the next turn itself.
 */
import type { ModelInfo } from '../engine/types.ts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
  name?: string;
}

export interface RenderedPrompt {
  text: string;
  /** Stop strings the format needs, added to the caller's. */
  stop: string[];
}

const HEADINGS: Record<ChatMessage['role'], string> = { system: 'System', user: 'User', assistant: 'Assistant' };

export function renderPrompt(messages: readonly ChatMessage[], _engineInfo: ModelInfo): RenderedPrompt {
  const blocks = messages.map((m) => `### ${HEADINGS[m.role]}${m.name ? ` (${m.name})` : ''}:\n${m.content}`);
  blocks.push('### Assistant:\n');
  return { text: blocks.join('\n\n'), stop: ['\n### '] };
}
