/**
 * The provider's chat fine-tuning JSONL (`{"messages": [...]}` per line), checked as a whole before any
 * training starts so a caller sees every bad line at once, with its line number. Shared by `svc finetune`
 * and the API's file upload.
 */
import { z } from 'zod';
import { runSliced, runThrough } from './sliced.ts';
import type { TrainingConversation, TrainingFileProblem } from './types.ts';

export interface TrainingFileLimits {
  /** Bytes of one line (bounds JSON parsing work per line). */
  maxLineBytes: number;
  /** Conversations in one file. */
  maxLines: number;
  /** Messages in one conversation. */
  maxMessages: number;
  /** Problems listed before the rest are summarised as a count. */
  maxProblems: number;
}

export const DEFAULT_TRAINING_FILE_LIMITS: TrainingFileLimits = { maxLineBytes: 64 * 1024, maxLines: 50_000, maxMessages: 64, maxProblems: 20 };

const textPart = z.object({ type: z.literal('text'), text: z.string() });
const message = z.object({
  role: z.enum(['system', 'user', 'assistant'], { error: 'role must be "system", "user" or "assistant"' }),
  // Text parts are accepted as the chat API accepts them and joined, so a file can reuse request bodies.
  content: z.union([z.string(), z.array(textPart).min(1)], { error: 'content must be a string or an array of text parts' }),
  weight: z.union([z.literal(0), z.literal(1)]).optional(),
});
const line = z.object({ messages: z.array(message).min(1, 'messages must not be empty') });

export interface TrainingFileCheck {
  conversations: TrainingConversation[];
  problems: TrainingFileProblem[];
  /** Problems beyond `maxProblems`, counted but not listed. */
  moreProblems: number;
  /** Non-empty lines seen. */
  lines: number;
}

export function validateTrainingJsonl(text: string, limits: TrainingFileLimits = DEFAULT_TRAINING_FILE_LIMITS): TrainingFileCheck {
  return runThrough(checkLines(text, limits));
}

/** The same check in slices: a 16 MiB upload takes about a second to parse, too long to hold a server's thread. */
export function validateTrainingJsonlAsync(text: string, limits: TrainingFileLimits = DEFAULT_TRAINING_FILE_LIMITS): Promise<TrainingFileCheck> {
  return runSliced(checkLines(text, limits));
}

/** The check, pausing (yielding) after every line so a caller decides when to give the thread back. */
function* checkLines(text: string, limits: TrainingFileLimits): Generator<void, TrainingFileCheck, void> {
  const conversations: TrainingConversation[] = [];
  const problems: TrainingFileProblem[] = [];
  let moreProblems = 0;
  let lines = 0;
  const report = (lineNo: number, msg: string) => {
    if (problems.length < limits.maxProblems) problems.push({ line: lineNo, message: msg });
    else moreProblems++;
  };
  const rows = text.split('\n');
  const encoder = new TextEncoder();
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) yield;
    const raw = rows[i].replace(/\r$/, '');
    if (raw.trim() === '') continue;
    const lineNo = i + 1;
    lines++;
    if (lines > limits.maxLines) {
      report(lineNo, `the file has more than ${limits.maxLines} conversations`);
      break;
    }
    if (raw.length > limits.maxLineBytes || encoder.encode(raw).byteLength > limits.maxLineBytes) {
      report(lineNo, `line is longer than ${limits.maxLineBytes} bytes`);
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      report(lineNo, `not valid JSON (${(err as Error).message})`);
      continue;
    }
    const parsed = line.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue.path.length ? issue.path.join('.') : 'line';
      report(lineNo, `${where}: ${issue.message}`);
      continue;
    }
    const msgs = parsed.data.messages;
    if (msgs.length > limits.maxMessages) {
      report(lineNo, `messages: ${msgs.length} messages, at most ${limits.maxMessages}`);
      continue;
    }
    if (!msgs.some((m) => m.role === 'assistant')) {
      report(lineNo, 'messages: no assistant message to learn from');
      continue;
    }
    if (!msgs.some((m) => m.role === 'assistant' && m.weight !== 0)) {
      report(lineNo, 'messages: every assistant message has weight 0, so there is nothing to learn from');
      continue;
    }
    conversations.push({
      line: lineNo,
      messages: msgs.map((m) => ({
        role: m.role,
        content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
        ...(m.weight !== undefined ? { weight: m.weight } : {}),
      })),
    });
  }
  if (lines === 0) report(1, 'the file has no conversations');
  return { conversations, problems, moreProblems, lines };
}

/** One line per problem, for CLI output and API error messages. */
export function describeProblems(check: Pick<TrainingFileCheck, 'problems' | 'moreProblems'>): string {
  const listed = check.problems.map((p) => `line ${p.line}: ${p.message}`);
  if (check.moreProblems > 0) listed.push(`and ${check.moreProblems} more problem(s)`);
  return listed.join('\n');
}
