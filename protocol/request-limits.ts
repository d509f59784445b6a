/**
 * Bounds on what a request may ask the main thread to do before the model runs: rendering the chat
 * template and tokenizing the prompt cost time in proportion to the text (about 2 s per MB on the test
 * machine), so a prompt that cannot fit the context window is refused by counting characters first.
 * The counts here are plain numbers; docs/api.md ("Request size limits") lists them.
 */
import { contentText, type ChatMessage } from '../engine/chat/index.ts';
import type { Tokenizer } from '../engine/tokenizer/types.ts';
import { invalidRequest, type ApiError } from './errors.ts';

/** Messages in one chat completion request. */
export const MAX_MESSAGES = 1024;
/** Entries of `tools` or of the legacy `functions` (the provider's own limit). */
export const MAX_TOOLS = 128;
/** Characters in one stop string; the stop matcher rescans its held-back text per token. */
export const MAX_STOP_CHARS = 1024;

/**
 * The most characters (UTF-16 code units, as String.length counts) one token of this vocabulary can
 * stand for in prompt text. A token covers the text of its bytes (byte-level and byte-fallback tokens
 * included, and UTF-8 never has fewer bytes than UTF-16 units), or a control token's own text when a
 * template's text is read for control tokens, or one unknown character (two units at most).
 */
const longestTokens = new WeakMap<Tokenizer, number>();
export function maxTokenChars(tokenizer: Tokenizer): number {
  let longest = longestTokens.get(tokenizer);
  if (longest === undefined) {
    longest = 2;
    for (let id = 0; id < tokenizer.vocabSize; id++) longest = Math.max(longest, tokenizer.tokenBytes(id).length, tokenizer.tokenText(id).length);
    longestTokens.set(tokenizer, longest);
  }
  return longest;
}

/**
 * Characters beyond which a prompt cannot fit: every token covers at most maxTokenChars of the prompt
 * text, so text longer than contextLength × that needs more than contextLength tokens. Never refuses a
 * prompt that would fit; refuses a 1 MB prompt before any tokenizing.
 */
export function promptCharLimit(contextLength: number, tokenizer: Tokenizer): number {
  return contextLength * maxTokenChars(tokenizer);
}

/**
 * Characters the rendered prompt surely contains for these messages. Content is counted trimmed
 * (templates may trim it). With a model's own chat template, assistant content is not counted: some
 * templates rewrite earlier assistant turns (dropping reasoning, say), and the bound must stay sound.
 */
export function promptChars(messages: readonly ChatMessage[], format: 'template' | 'fallback'): number {
  let n = 0;
  for (const [i, m] of messages.entries()) {
    if (m.role === 'assistant' && format === 'template') continue;
    n += contentText(m.content, `messages[${i}]`).trim().length;
  }
  return n;
}

/**
 * The newest turns of a conversation that could still fit beside `fixedChars` (the system prompt and the
 * caller's messages), cut where an exchange begins (a user turn), as turnsToDrop cuts. Older turns are
 * left out before any rendering: with more characters than the bound they could not fit, so the token
 * search over what remains finds the same answer, with far fewer renders of a long stored conversation.
 */
export function historyWithinBound<T extends ChatMessage>(input: PromptSizeInput, history: readonly T[]): readonly T[] {
  const format = input.hasTemplate ? 'template' : 'fallback';
  const limit = promptCharLimit(input.contextLength, input.tokenizer);
  let chars = promptChars(input.messages, format);
  let keepFrom = history.length;
  for (let i = history.length - 1; i >= 0; i--) {
    chars += promptChars([history[i]], format);
    if (chars > limit) break;
    if (i === 0 || history[i].role === 'user') keepFrom = i;
  }
  return keepFrom === 0 ? history : history.slice(keepFrom);
}

export interface PromptSizeInput {
  contextLength: number;
  tokenizer: Tokenizer;
  /** The model has its own chat template (else the documented fallback format renders the prompt). */
  hasTemplate: boolean;
  /** Everything that goes into the prompt: the specialist's system message first, then the caller's. */
  messages: readonly ChatMessage[];
  /** The API parameter the prompt came from: `messages`, or `prompt` on /v1/infer. */
  param: string;
}

/** 400 `context_length_exceeded` for a prompt whose characters alone show it cannot fit. */
export function refuseOversizedPrompt(input: PromptSizeInput): void {
  const limit = promptCharLimit(input.contextLength, input.tokenizer);
  const chars = promptChars(input.messages, input.hasTemplate ? 'template' : 'fallback');
  if (chars <= limit) return;
  const holds = input.param === 'messages' ? "messages (with the specialist's instructions) hold" : "prompt (with the specialist's instructions) holds";
  throw promptTooLong(input, `the ${holds} ${chars}`);
}

/**
 * The same 400 for a rendered prompt (chat format, tool descriptions and all) found longer than the
 * limit before tokenizing (renderChat's maxChars): tools are not in the message count above.
 */
export function renderedPromptTooLong(input: Omit<PromptSizeInput, 'messages' | 'hasTemplate'>, chars: number): ApiError {
  return promptTooLong(input, `rendered with the chat format${input.param === 'messages' ? ' and the tools' : ''}, the prompt has ${chars}`);
}

function promptTooLong(input: Omit<PromptSizeInput, 'messages' | 'hasTemplate'>, what: string): ApiError {
  const limit = promptCharLimit(input.contextLength, input.tokenizer);
  return invalidRequest(
    `This model's maximum context length is ${input.contextLength} tokens, and no token of its vocabulary spans more than ${maxTokenChars(input.tokenizer)} characters, so a prompt of more than ${limit} characters cannot fit; ${what}. Shorten the input.`,
    input.param,
    'context_length_exceeded',
  );
}
