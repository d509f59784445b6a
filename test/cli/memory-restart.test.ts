/** Chat memory lives in the database: a conversation goes on after the `svc serve` process is restarted. */
import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedModel } from '../helpers/models.ts';
import { createKey, startServe } from './helpers/cli.ts';

async function turn(url: string, key: string, prompt: string): Promise<{ result: string; history_turns: number }> {
  const res = await fetch(`${url}/v1/infer`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ specialist: 'chat', prompt, conversation_id: 'restart-1', max_tokens: 4, temperature: 0 }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { result: string; history_turns: number };
}

describe('chat memory across a process restart', () => {
  it('keeps the conversation after SIGTERM and a new svc serve on the same data folder', async () => {
    const data = mkdtempSync(join(tmpdir(), 'svc-memory-'));
    const key = await createKey(data, '--plan', 'scale');
    const model = ['--model', sharedModel('stories260K.gguf')];
    const first = await startServe(data, model);
    try {
      expect((await turn(first.url, key, 'Tom has a red ball.')).history_turns).toBe(0);
      expect((await turn(first.url, key, 'Where is the ball?')).history_turns).toBe(2);
    } finally {
      first.proc.kill('SIGTERM');
      expect((await first.exited).code).toBe(0);
    }
    const second = await startServe(data, model);
    try {
      expect((await turn(second.url, key, 'And then?')).history_turns).toBe(4);
    } finally {
      second.proc.kill('SIGTERM');
      await second.exited;
    }
  });
});
