/**
 * A request whose caller leaves while it waits in the queue never reached the model: it holds no place in
 * the key's per-minute window afterwards, and is not counted as usage. Over real HTTP with a real engine.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer, chatBody, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startServer({ admission: { maxRunning: 1, maxQueued: 4 } });
});
afterAll(() => h.close());

async function until(cond: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const post = (path: string, key: string, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${h.baseURL}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(key) }, body: JSON.stringify(body), signal });

const remaining = async (key: string) => Number((await fetch(`${h.baseURL}/models`, { headers: bearer(key) })).headers.get('x-ratelimit-remaining-requests'));
const used = async (key: string) => (await (await fetch(`${h.baseURL}/usage`, { headers: bearer(key) })).json()).requests_used;

it('gives the per-minute place back to a caller who left while queued, on both endpoints', async () => {
  const admission = h.app.service.admission;
  const holder = h.key('scale', { paid: true });
  const solo = h.key('solo', { paid: true });

  // A long stream holds the only running place.
  const aAbort = new AbortController();
  const a = await post('/chat/completions', holder, chatBody({ max_tokens: 2000, stream: true, messages: [{ role: 'user', content: 'Once upon a time' }] }), aAbort.signal);
  const reader = a.body!.getReader();
  let seen = '';
  while (!/"content":"[^"]/.test(seen)) seen += new TextDecoder().decode((await reader.read()).value);
  expect(admission.runningCount).toBe(1);

  for (const [path, body] of [['/chat/completions', chatBody({ max_tokens: 4 })], ['/infer', { specialist: 'chat', prompt: 'Hi', max_tokens: 4 }]] as const) {
    const abort = new AbortController();
    const queued = post(path, solo, body, abort.signal).catch((e: unknown) => e);
    await until(() => admission.queuedCount === 1, `${path} to queue`);
    // While it waits it holds a place in the window, as any accepted request does.
    expect(await remaining(solo)).toBe(19);
    abort.abort();
    expect(await queued).toBeInstanceOf(Error);
    await until(() => admission.queuedCount === 0, `${path} to leave the queue`, 5000);
    expect(await remaining(solo)).toBe(20);
  }

  aAbort.abort();
  await until(() => admission.runningCount === 0, 'the stream to stop', 10_000);
  // Neither queued request reached the model; the solo key has used nothing.
  expect(await used(solo)).toBe(0);
  // A request that does reach the model keeps its place.
  const ok = await post('/infer', solo, { specialist: 'chat', prompt: 'Hi', max_tokens: 2 });
  expect(ok.status).toBe(200);
  expect(await remaining(solo)).toBe(19);
}, 120_000);
