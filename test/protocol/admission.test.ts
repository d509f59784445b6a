/** The bounded admission queue on its own: places, order, per-key limits and callers who leave. */
import { describe, expect, it } from 'vitest';
import { Admission, type Applicant, type Ticket } from '../../protocol/admission.ts';
import { ApiError } from '../../protocol/errors.ts';

const who = (key: string, maxConcurrent = 10): Applicant => ({ key, maxConcurrent, planName: 'Test' });
const never = new AbortController().signal;

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ApiError);
  return e as ApiError;
}

/** Whether a promise has settled after pending callbacks ran. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('Admission', () => {
  it('runs up to maxRunning, queues up to maxQueued in order, and refuses the rest with 503 overloaded', async () => {
    const a = new Admission({ maxRunning: 2, maxQueued: 2 });
    const r1 = await a.admit(who('a'), never);
    await a.admit(who('b'), never);
    const q1 = a.admit(who('c'), never);
    const q2 = a.admit(who('d'), never);
    expect(a.runningCount).toBe(2);
    expect(a.queuedCount).toBe(2);
    const e = await refusal(a.admit(who('e'), never));
    expect(e.status).toBe(503);
    expect(e.toBody().error).toMatchObject({ type: 'server_error', code: 'overloaded' });
    expect(e.retryAfterSeconds).toBeGreaterThan(0);

    expect(await settled(q1)).toBe(false);
    r1.release();
    r1.release(); // idempotent: must not free a second place
    expect(await settled(q1)).toBe(true);
    expect(await settled(q2)).toBe(false);
    expect(a.runningCount).toBe(2);
    expect(a.queuedCount).toBe(1);
  });

  it('refuses a key over its limit with 429 concurrency_limit_exceeded while other keys still get in', async () => {
    const a = new Admission({ maxRunning: 1, maxQueued: 10 });
    const t = await a.admit(who('solo', 2), never);
    const waiting = a.admit(who('solo', 2), never);
    const e = await refusal(a.admit(who('solo', 2), never));
    expect(e.status).toBe(429);
    expect(e.toBody().error).toMatchObject({ type: 'rate_limit_error', code: 'concurrency_limit_exceeded' });
    expect(e.message).toContain('2 requests');
    expect(e.retryAfterSeconds).toBe(1);
    const other = a.admit(who('other', 2), never);
    expect(a.queuedCount).toBe(2);
    t.release();
    const second = await waiting;
    // The key's place freed with the release, so it may queue again.
    const again = a.admit(who('solo', 2), never);
    second.release();
    (await other).release();
    (await again).release();
    expect(a.runningCount).toBe(0);
  });

  it('never lets one key hold more than half of all places, whatever its plan says', async () => {
    const a = new Admission({ maxRunning: 2, maxQueued: 4 });
    expect(a.keyLimit(1000)).toBe(3);
    const held: Promise<Ticket>[] = [0, 1, 2].map(() => a.admit(who('big', 1000), never));
    expect((await refusal(a.admit(who('big', 1000), never))).code).toBe('concurrency_limit_exceeded');
    expect(await settled(a.admit(who('small'), never))).toBe(false);
    expect(a.queuedCount).toBe(2);
    void held;
  });

  it('takes a waiter that aborts out of the queue at once, with the abort reason', async () => {
    const a = new Admission({ maxRunning: 1, maxQueued: 1 });
    const t = await a.admit(who('a'), never);
    const leaving = new AbortController();
    const q = a.admit(who('b', 1), leaving.signal);
    expect((await refusal(a.admit(who('c'), never))).code).toBe('overloaded');
    const reason = new Error('client disconnected');
    leaving.abort(reason);
    await expect(q).rejects.toBe(reason);
    expect(a.queuedCount).toBe(0);
    // Its queue place and its key's count are both free again.
    const next = a.admit(who('b', 1), never);
    expect(a.queuedCount).toBe(1);
    t.release();
    (await next).release();
    expect(a.runningCount).toBe(0);
  });
});
