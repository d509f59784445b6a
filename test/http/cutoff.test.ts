/**
 * An answer the server cuts off never looks complete: `svc serve` stopped with SIGTERM and a 1 s drain
 * deadline while generations run answers 503 (whole responses) or an in-stream error event (streams,
 * no `finish_reason`, no `[DONE]`), keeps the cut-off turn out of chat memory and counts none of them.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AccountAdmin } from '../../adapters/sqlite/accounts.ts';
import { openDatabase } from '../../adapters/sqlite/db.ts';
import { SqliteStore } from '../../adapters/sqlite/store.ts';
import { billingPeriodAt } from '../../protocol/billing-period.ts';
import { createKey, startServe, type Served } from '../cli/helpers/cli.ts';
import { sharedModel } from '../helpers/models.ts';
import { loadPlans } from '../../adapters/config-node.ts';

const started: Served[] = [];
afterEach(() => {
  for (const s of started.splice(0)) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
});

const LONG = { max_tokens: 2000, temperature: 0 };

function post(s: Served, path: string, key: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${s.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

const chat = (extra: Record<string, unknown>) => ({ model: 'svc-chat', messages: [{ role: 'user', content: 'Once upon a time' }], ...extra });

const interruptedError = {
  error: { message: expect.stringMatching(/cut off.*shutting down.*drain deadline/), type: 'server_error', param: null, code: 'generation_interrupted' },
};

describe('answers cut off by the drain deadline', () => {
  it('are 503s or in-stream errors, never a finished answer, and are neither remembered nor counted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-cutoff-'));
    const key = await createKey(dir, '--plan', 'scale');
    const s = await startServe(dir, ['--model', sharedModel('stories260K.gguf'), '--drain-seconds', '1']);
    started.push(s);

    // One complete turn first: it is remembered and counted.
    const first = await post(s, '/v1/infer', key, { specialist: 'chat', prompt: 'Tom has a red ball.', conversation_id: 'cut-1', max_tokens: 4, temperature: 0 });
    expect(first.status).toBe(200);

    // Three long generations in flight: a stream (its first content already out), a whole completion and a memory turn.
    const stream = await post(s, '/v1/chat/completions', key, chat({ ...LONG, stream: true }));
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!/"content":"[^"]/.test(text)) text += decoder.decode((await reader.read()).value);
    const whole = post(s, '/v1/chat/completions', key, chat(LONG));
    const turn = post(s, '/v1/infer', key, { specialist: 'chat', prompt: 'Once upon a time', conversation_id: 'cut-1', ...LONG });
    // Let both arrive before the signal (otherwise they would be refused as newcomers to a draining server).
    await new Promise((r) => setTimeout(r, 3000));
    s.proc.kill('SIGTERM');

    for (const res of [await whole, await turn]) {
      expect(res.status).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await res.json()).toEqual(interruptedError);
    }
    for (let step = await reader.read(); !step.done; step = await reader.read()) text += decoder.decode(step.value);
    const events = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => e.slice(6));
    expect(events.length).toBeGreaterThan(2);
    expect(events).not.toContain('[DONE]');
    const last = JSON.parse(events.at(-1)!);
    expect(last).toEqual(interruptedError);
    // No chunk claims the answer finished.
    for (const e of events.slice(0, -1)) expect(JSON.parse(e).choices[0].finish_reason).toBeNull();
    expect(await s.exited).toEqual({ code: 0, signal: null });

    const db = openDatabase(dir);
    try {
      const { key: k } = new AccountAdmin(db, loadPlans()).resolveKey(key);
      const store = new SqliteStore(db);
      expect(store.conversationTurns(k.id, 'cut-1', 100)).toEqual([
        { role: 'user', content: 'Tom has a red ball.' },
        { role: 'assistant', content: expect.any(String) },
      ]);
      expect(store.requestsInPeriod(k.id, billingPeriodAt(Date.now()).start)).toBe(1);
    } finally {
      db.close();
    }
  }, 240_000);
});
