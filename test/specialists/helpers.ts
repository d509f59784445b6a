/** A server on the real tiny story model for the specialist tests, and /v1/infer over real HTTP. */
import { afterAll, beforeAll, expect } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { bearer, postJson, startServer, type Harness } from '../http/helpers/harness.ts';

export interface InferBody {
  id: string;
  specialist: string;
  result: string;
  tokens_used: number;
  latency_ms: number;
  finish_reason: string;
  confidence?: number;
  conversation_id?: string;
  history_turns?: number;
}

/** One server for the file, and a Scale key (all specialists and features, 2000 requests a minute). */
export function specialistServer(): { h: () => Harness; key: () => string } {
  let h: Harness;
  let key: string;
  beforeAll(async () => {
    h = await startServer({ engine: () => testEngine() });
    key = h.key('scale', { paid: true });
  });
  afterAll(() => h.close());
  return { h: () => h, key: () => key };
}

export async function infer(h: Harness, key: string, body: Record<string, unknown>): Promise<InferBody> {
  const res = await postJson(`${h.baseURL}/infer`, body, bearer(key));
  const json = await res.json();
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json as InferBody;
}

export const STORY = [
  'Tom had a red ball. He played with it in the park every day.',
  'One day the ball rolled into the pond! Tom was sad.',
  'His sister Amy got a long stick and pulled the ball out. Tom smiled and said thank you.',
].join('\n');

/** Whether `answer` is sentences of a context, each verbatim, joined by single spaces (qa's grounded form). */
export function quoted(answer: string, sentences: readonly string[]): boolean {
  if (answer === '') return true;
  return sentences.some((s) => (answer === s || answer.startsWith(`${s} `)) && quoted(answer.slice(s.length + 1), sentences));
}
