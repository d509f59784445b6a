/**
 * Training conversations → token ids and loss masks, rendered exactly as serving renders a chat (the
 * model's chat template, or the fallback format) so the adapter learns the format inference shows it.
 *
 * Each assistant message is located by rendering the conversation incrementally: the prompt before it
 * (messages[0..k) with the generation prompt, what serving would send) and the conversation through it
 * (messages[0..k]). The loss covers the message's tokens and the end of its turn, so the model learns to
 * stop: the template's text after the message up to its end-of-generation token, or for the fallback
 * format the "\n\n### " that opens the next block (serving's stop string). When nothing follows the last
 * message (the fallback; a template that writes no end-of-turn), EOS is appended: serving and llama.cpp
 * both end generation on it, with or without our stop strings. (A model whose pre-training never showed
 * it EOS cannot learn to write it through adapters of its inner matrices: stories260K's EOS row was never
 * trained, nor its '#' byte token; such a model answers in the trained format and then runs on.)
 *
 * The whole conversation is tokenized once; a character position maps to the number of leading tokens
 * that tokenizing the text up to it shares with the whole. A token straddling a span boundary counts as
 * part of the assistant's span.
 */
import { encodeRendered, renderChat, type ChatMessage, type ChatModel } from '../chat/index.ts';
import type { Tokenizer } from '../tokenizer/types.ts';
import { runSliced, runThrough } from './sliced.ts';
import type { TrainingConversation, TrainingExample, TrainingFileProblem } from './types.ts';

export interface RenderTrainingOptions {
  /** Longest rendered conversation in tokens (the trainer's sequence limit, at most the context). */
  maxTokens: number;
}

export interface RenderedTrainingSet {
  examples: TrainingExample[];
  /** Conversations that could not be rendered or are too long, by line (index + 1 without line numbers). */
  problems: TrainingFileProblem[];
}

/** The fallback format's end of an assistant turn: the blank line and heading start of the next block. */
const FALLBACK_TURN_END = '\n\n### ';

export function renderTrainingExamples(model: ChatModel, conversations: readonly TrainingConversation[], opts: RenderTrainingOptions): RenderedTrainingSet {
  return runThrough(renderEach(model, conversations, opts));
}

/** The same in slices, for a server: tokenizing a whole training file would otherwise hold its thread for seconds. */
export function renderTrainingExamplesAsync(model: ChatModel, conversations: readonly TrainingConversation[], opts: RenderTrainingOptions): Promise<RenderedTrainingSet> {
  return runSliced(renderEach(model, conversations, opts));
}

function* renderEach(model: ChatModel, conversations: readonly TrainingConversation[], opts: RenderTrainingOptions): Generator<void, RenderedTrainingSet, void> {
  if (!Number.isInteger(opts.maxTokens) || opts.maxTokens < 2) throw new Error(`maxTokens must be an integer ≥ 2 (got ${opts.maxTokens})`);
  const examples: TrainingExample[] = [];
  const problems: TrainingFileProblem[] = [];
  for (let i = 0; i < conversations.length; i++) {
    if (i > 0) yield;
    const c = conversations[i];
    const line = c.line ?? i + 1;
    try {
      const example = renderConversation(model, c);
      if (example.tokens.length > opts.maxTokens) {
        problems.push({ line, message: `the rendered conversation is ${example.tokens.length} tokens, more than the ${opts.maxTokens} allowed` });
      } else {
        examples.push(example);
      }
    } catch (e) {
      problems.push({ line, message: (e as Error).message });
    }
  }
  return { examples, problems };
}

/** One conversation as a TrainingExample; throws an Error saying what is wrong with it. */
export function renderConversation(model: ChatModel, conversation: TrainingConversation): TrainingExample {
  const messages: ChatMessage[] = conversation.messages.map((m) => ({ role: m.role, content: m.content }) as ChatMessage);
  const t = model.tokenizer;
  const full = renderChat(model, messages, { addGenerationPrompt: false });
  const tokens = full.tokens;
  const at = tokenPositions(t, full.text, tokens, full.format);
  const targets = new Uint8Array(tokens.length + 1);
  let appendEos = false;

  conversation.messages.forEach((m, k) => {
    if (m.role !== 'assistant') return;
    const where = `messages[${k}]`;
    if (k === 0) throw new Error(`${where}: the conversation starts with an assistant message; it needs a user message before it`);
    const prompt = renderChat(model, messages.slice(0, k), { addGenerationPrompt: true }).text;
    const through = renderChat(model, messages.slice(0, k + 1), { addGenerationPrompt: false }).text;
    if (!through.startsWith(prompt) || !full.text.startsWith(through)) {
      throw new Error(`${where}: the chat template does not render the conversation incrementally (the prompt before this message is not a prefix of the conversation), so the assistant's part cannot be located`);
    }
    if (m.weight === 0) return;
    const start = prompt.length;
    const contentAt = m.content === '' ? start : through.lastIndexOf(m.content);
    if (contentAt < start) throw new Error(`${where}: the chat template does not write the assistant's content where expected`);
    const contentEnd = contentAt + m.content.length;
    const last = k === conversation.messages.length - 1;
    const first = at.start(start);
    let end: number;
    if (full.format === 'fallback') {
      if (last) {
        end = at.end(contentEnd);
        appendEos = true;
      } else {
        if (!full.text.startsWith(FALLBACK_TURN_END, contentEnd)) throw new Error(`${where}: the fallback format does not follow the message with ${JSON.stringify(FALLBACK_TURN_END)}`);
        end = at.end(contentEnd + FALLBACK_TURN_END.length);
      }
    } else {
      // The template's end of turn: up to its first end-of-generation token, or all it writes after the message.
      const tailEnd = at.end(through.length);
      end = tailEnd;
      const from = Math.max(at.start(contentEnd), first);
      const eog = tokens.findIndex((id, j) => j >= from && j < tailEnd && t.isEndOfGeneration(id));
      if (eog >= 0) end = eog + 1;
      else if (last) appendEos = true;
    }
    for (let j = Math.max(first, 1); j < end; j++) targets[j] = 1;
  });

  if (appendEos && t.eos !== undefined && tokens[tokens.length - 1] !== t.eos) {
    tokens.push(t.eos);
    targets[tokens.length - 1] = 1;
  }
  // targets[j] = 1 means token j is predicted in the loss; the mask marks the position that predicts it.
  const lossMask = new Uint8Array(tokens.length);
  for (let j = 1; j < tokens.length; j++) lossMask[j - 1] = targets[j];
  if (!lossMask.some((v) => v === 1)) throw new Error('no assistant tokens to learn from once rendered');
  return { tokens: Int32Array.from(tokens), lossMask };
}

/**
 * Character position → token index in the conversation's tokens. `start(c)`: the first token holding any
 * character at or after c; `end(c)`: one past the last token holding any character before c.
 */
function tokenPositions(t: Tokenizer, text: string, tokens: readonly number[], format: 'template' | 'fallback') {
  // A tokenizer that appends EOS to every encoding (rare) would make every prefix look different at its end.
  const trailer = encodeRendered(t, '', format).filter((id) => id === t.eos && id !== t.bos).length;
  const prefixTokens = (c: number) => {
    const p = encodeRendered(t, text.slice(0, c), format);
    return trailer > 0 ? p.slice(0, p.length - trailer) : p;
  };
  const shared = (p: readonly number[]) => {
    let n = 0;
    while (n < p.length && n < tokens.length && p[n] === tokens[n]) n++;
    return n;
  };
  return {
    start: (c: number) => shared(prefixTokens(c)),
    end: (c: number) => {
      const p = prefixTokens(c);
      const n = shared(p);
      return n === p.length ? n : Math.min(n + 1, tokens.length);
    },
  };
}
