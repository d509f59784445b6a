/**
 * Generated text → the provider's message deltas, per output plan: text as `content`, tool calls as
 * `tool_calls` pieces (legacy: `function_call`). Streams send the deltas as they come; whole answers
 * fold the same deltas into one message, so both always agree.
 */
import type { GenerationResult } from '../../engine/types.ts';
import { randomBase62 } from '../ids.ts';
import type { OutputPlan, ToolPlan } from './plan.ts';
import { ToolCallReader, type ToolEvent } from './tool-call-reader.ts';

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface Delta {
  content?: string;
  tool_calls?: ToolCallDelta[];
  function_call?: { name?: string; arguments: string };
}

export interface OutputReader {
  push(text: string): Delta[];
  /** What is left once generation has ended, and the answer's finish_reason. */
  end(result: GenerationResult): { deltas: Delta[]; finishReason: string };
}

export function outputReader(plan: OutputPlan): OutputReader {
  return plan.toolCalls ? new ToolsReader(plan.toolCalls) : new TextReader(plan.closing);
}

export function toolCallId(): string {
  return `call_${randomBase62(24)}`;
}

class TextReader implements OutputReader {
  private text = '';

  constructor(private readonly closing: OutputPlan['closing']) {}

  push(text: string): Delta[] {
    this.text += text;
    return text ? [{ content: text }] : [];
  }

  end(result: GenerationResult): { deltas: Delta[]; finishReason: string } {
    const close = this.closing?.complete(this.text) ?? '';
    return { deltas: close ? [{ content: close }] : [], finishReason: result.finishReason };
  }
}

class ToolsReader implements OutputReader {
  private readonly reader = new ToolCallReader();

  constructor(private readonly plan: ToolPlan) {}

  push(text: string): Delta[] {
    return this.reader.push(text).map((e) => this.delta(e));
  }

  end(result: GenerationResult): { deltas: Delta[]; finishReason: string } {
    const { events, cutOff } = this.reader.end();
    const calls = this.reader.callCount;
    // A call cut off by max_tokens is sent as far as it got, with the generation's own finish_reason.
    const finishReason = cutOff || calls === 0 ? result.finishReason : this.plan.legacy ? 'function_call' : 'tool_calls';
    return { deltas: events.map((e) => this.delta(e)), finishReason };
  }

  private delta(e: ToolEvent): Delta {
    if (e.type === 'content') return { content: e.text };
    if (this.plan.legacy) return { function_call: e.type === 'call' ? { name: e.name, arguments: '' } : { arguments: e.text } };
    if (e.type === 'call') return { tool_calls: [{ index: e.index, id: toolCallId(), type: 'function', function: { name: e.name, arguments: '' } }] };
    return { tool_calls: [{ index: e.index, function: { arguments: e.text } }] };
  }
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  function_call?: { name: string; arguments: string };
}

/** The deltas of a whole answer as one message; `content` is null when calls came without text. */
export function assembleMessage(deltas: readonly Delta[]): AssistantMessage {
  let content = '';
  const calls: NonNullable<AssistantMessage['tool_calls']> = [];
  let fn: AssistantMessage['function_call'];
  for (const d of deltas) {
    content += d.content ?? '';
    for (const c of d.tool_calls ?? []) {
      calls[c.index] ??= { id: c.id ?? toolCallId(), type: 'function', function: { name: c.function.name ?? '', arguments: '' } };
      calls[c.index].function.arguments += c.function.arguments;
    }
    if (d.function_call) {
      fn ??= { name: d.function_call.name ?? '', arguments: '' };
      fn.arguments += d.function_call.arguments;
    }
  }
  const hasCalls = calls.length > 0 || fn !== undefined;
  return {
    role: 'assistant',
    content: hasCalls && content === '' ? null : content,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(fn ? { function_call: fn } : {}),
  };
}
