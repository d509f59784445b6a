/**
 * The chat format for models without a chat template (all our test models, and base models in general).
 * Markdown-style headed blocks, a blank line between them, the assistant block left open:
 *
 *     ### System:
 *     You are a helpful assistant.
 *
 *     ### Tools:
 *     (only with tools: the functions as JSON lines and how to call them, see TOOLS_INTRO)
 *
 *     ### User:
 *     Hello
 *
 *     ### Assistant:
 *
 * Why this shape: a base model has seen headed Markdown transcripts and continues the open block as the
 * assistant's turn in plain prose (a story model simply goes on writing); and the next heading is a
 * distinctive string, so the stop string "\n### " ends the turn the moment the model starts writing the
 * user's part. Tool calls use the wire format of engine/grammar/tool-format.ts, and tool results get a
 * `### Tool (name):` block. The protocol layer's earlier fallback (protocol/prompt.ts) used the same
 * headings, so prompts do not change for plain chats.
 */
import { formatToolCall, jsonOneLine, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../grammar/tool-format.ts';
import { EngineInputError } from '../types.ts';
import { contentText } from './content.ts';
import type { ChatMessage, ChatTool } from './types.ts';

/** Stop strings the fallback format needs (the next block's heading). */
export const FALLBACK_STOP = ['\n### '] as const;

export const TOOLS_INTRO =
  'You can call the functions below. To call one, answer with exactly\n' +
  `${TOOL_CALL_OPEN}\n{"name": "<function name>", "arguments": <arguments as a JSON object>}\n${TOOL_CALL_CLOSE}\n` +
  'and nothing else. The functions:';

const HEADINGS: Record<ChatMessage['role'], string> = { system: 'System', developer: 'System', user: 'User', assistant: 'Assistant', tool: 'Tool' };

export function renderFallback(messages: readonly ChatMessage[], tools: readonly ChatTool[] | undefined, addGenerationPrompt: boolean): string {
  const blocks: string[] = [];
  const callNames = new Map<string, string>();
  let toolsPlaced = !tools || tools.length === 0;
  const toolsBlock = () => `### Tools:\n${TOOLS_INTRO}\n${tools!.map((t) => jsonOneLine(toolLine(t))).join('\n')}`;
  messages.forEach((m, i) => {
    const where = `messages[${i}]`;
    if (!m || typeof m !== 'object' || !(m.role in HEADINGS)) throw new EngineInputError(`${where}.role must be system, developer, user, assistant or tool`, `${where}.role`);
    if (!toolsPlaced && m.role !== 'system' && m.role !== 'developer') {
      blocks.push(toolsBlock());
      toolsPlaced = true;
    }
    let heading = HEADINGS[m.role];
    let body = contentText(m.content, where);
    if (m.role === 'assistant' && m.tool_calls && m.tool_calls.length > 0) {
      const calls = m.tool_calls.map((c) => {
        if (c.id) callNames.set(c.id, c.function.name);
        return formatToolCall(c.function.name, c.function.arguments);
      });
      body = [body, ...calls].filter((s) => s.length > 0).join('\n');
    }
    if (m.role === 'tool') {
      const name = m.name ?? (m.tool_call_id ? callNames.get(m.tool_call_id) : undefined);
      if (name) heading += ` (${name})`;
    } else if (m.name && m.role === 'user') {
      heading += ` (${m.name})`;
    }
    blocks.push(`### ${heading}:\n${body}`);
  });
  if (!toolsPlaced) blocks.push(toolsBlock());
  if (addGenerationPrompt) blocks.push('### Assistant:\n');
  return blocks.join('\n\n');
}

function toolLine(t: ChatTool): Record<string, unknown> {
  const f = t.function;
  return { name: f.name, ...(f.description ? { description: f.description } : {}), parameters: f.parameters ?? { type: 'object', properties: {} } };
}
