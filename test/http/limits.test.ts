/** Plans, trials, per-minute limits and monthly allowances over HTTP, with the clock under test control. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { billingPeriodAt } from '../../protocol/billing-period.ts';
import { bearer, chatBody, DAY_MS, postJson, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
beforeEach(async () => {
  h = await startServer();
});
afterEach(() => h.close());

/** A request that uses a per-minute slot and stops at validation, so no model is needed. */
const spend = (key: string) => postJson(`${h.baseURL}/chat/completions`, chatBody({ max_tokens: 99999 }), bearer(key));

function fillMonth(key: string, specialist: string, n: number): void {
  const { key: k } = h.admin.resolveKey(key);
  const period = billingPeriodAt(h.clock.now()).start;
  for (let i = 0; i < n; i++) h.app.store.recordUsage({ keyId: k.id, periodStart: period, specialist, promptTokens: 2, completionTokens: 3 });
}

describe('per-minute limit', () => {
  it('counts inference requests per key and answers the 21st on Solo with 429 and Retry-After', async () => {
    const key = h.key('solo', { paid: true });
    for (let i = 0; i < 20; i++) {
      const res = await spend(key);
      expect(res.status).toBe(400);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('20');
      expect(res.headers.get('x-ratelimit-remaining-requests')).toBe(String(19 - i));
    }
    expect((await spend(key)).headers.get('x-ratelimit-reset-requests')).toBe('1m0s');
    const res = await spend(key);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('60');
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(await res.json()).toEqual({ error: { message: expect.stringContaining('20 requests per minute'), type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } });

    // Another key is not affected. A minute means a minute: no refill before the first 20 are 60 s old.
    expect((await spend(h.key('solo'))).status).toBe(400);
    h.clock.advance(59_999);
    expect((await spend(key)).status).toBe(429);
    h.clock.advance(1);
    expect((await spend(key)).status).toBe(400);
  });

  it('puts the headers on every authenticated response; reading models and usage uses no slot', async () => {
    const key = h.key('starter');
    for (const path of ['/models', '/usage', '/models/svc-chat']) {
      const res = await fetch(h.baseURL + path, { headers: bearer(key) });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('100');
      expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('100');
      expect(res.headers.get('x-ratelimit-reset-requests')).toBe('0s');
    }
    await spend(key);
    const after = await fetch(`${h.baseURL}/models`, { headers: bearer(key) });
    expect(after.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    expect(after.headers.get('x-ratelimit-reset-requests')).toBe('1m0s');
  });

  it('uses per-account limits on Enterprise and applies plan changes to the next request', async () => {
    const key = h.key('enterprise', { rpm: 2, monthly: 1000, paid: true });
    await spend(key);
    await spend(key);
    const limited = await spend(key);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('60');
    h.admin.setPlan(h.admin.resolveKey(key).account.id, { plan: 'scale' }, h.clock.now());
    const res = await spend(key);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('2000');
  });
});

describe('trial', () => {
  it('works for 7 days, then answers 403 trial_expired until the account pays', async () => {
    const key = h.key('solo');
    h.clock.advance(7 * DAY_MS - 1);
    expect((await fetch(`${h.baseURL}/models`, { headers: bearer(key) })).status).toBe(200);
    h.clock.advance(1);
    for (const res of [await fetch(`${h.baseURL}/models`, { headers: bearer(key) }), await postJson(`${h.baseURL}/chat/completions`, chatBody(), bearer(key))]) {
      expect(res.status).toBe(403);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('20');
      const body = await res.json();
      expect(body.error).toMatchObject({ type: 'permission_error', code: 'trial_expired' });
      expect(body.error.message).toContain('trial');
    }
    h.admin.setPlan(h.admin.resolveKey(key).account.id, { plan: 'solo', paid: true }, h.clock.now());
    expect((await fetch(`${h.baseURL}/models`, { headers: bearer(key) })).status).toBe(200);
  });
});

describe('plan contents', () => {
  it('403s a specialist the plan lacks, by model name or on /v1/infer', async () => {
    const key = h.key('solo');
    for (const model of ['svc-code', 'code', 'svc-extract', 'qa']) {
      const res = await postJson(`${h.baseURL}/chat/completions`, chatBody({ model }), bearer(key));
      expect(res.status, model).toBe(403);
      const body = await res.json();
      expect(body.error).toMatchObject({ type: 'permission_error', code: 'specialist_not_in_plan', param: 'model' });
    }
    const res = await postJson(`${h.baseURL}/infer`, { specialist: 'code', prompt: 'x' }, bearer(key));
    expect(res.status).toBe(403);
    expect((await res.json()).error.message).toBe("Your plan (Solo) does not include the 'code' specialist. Plans that include it: Professional, Scale, Enterprise.");
  });
});

describe('monthly allowance', () => {
  it('429s with insufficient_quota, Retry-After to the period end and no-retry advice, then resets next period', async () => {
    const key = h.key('enterprise', { rpm: 100, monthly: 5, paid: true });
    fillMonth(key, 'chat', 5);
    const res = await postJson(`${h.baseURL}/chat/completions`, chatBody(), bearer(key));
    expect(res.status).toBe(429);
    const end = billingPeriodAt(h.clock.now()).end;
    expect(Number(res.headers.get('retry-after'))).toBe(Math.ceil((end - h.clock.now()) / 1000));
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(await res.json()).toEqual({ error: { message: expect.stringContaining('used its 5 requests'), type: 'insufficient_quota', param: null, code: 'insufficient_quota' } });
    const inferRes = await postJson(`${h.baseURL}/infer`, { specialist: 'qa', prompt: 'x' }, bearer(key));
    expect(inferRes.status).toBe(429);

    // A sandbox key on the same account has its own allowance.
    const sandbox = h.admin.addKey(h.admin.resolveKey(key).account.id, 'test', h.clock.now()).secret;
    const usage = await (await fetch(`${h.baseURL}/usage`, { headers: bearer(sandbox) })).json();
    expect(usage.requests_used).toBe(0);

    h.clock.set(end);
    const next = await fetch(`${h.baseURL}/usage`, { headers: bearer(key) });
    expect((await next.json()).requests_used).toBe(0);
  });
});

describe('GET /v1/usage', () => {
  it('reports the period, limit, tokens and by-specialist counts that sum to requests_used', async () => {
    h.clock.set(Date.UTC(2025, 2, 17, 9, 30));
    const key = h.key('starter');
    fillMonth(key, 'chat', 3);
    fillMonth(key, 'qa', 2);
    const res = await fetch(`${h.baseURL}/usage`, { headers: bearer(key) });
    const body = await res.json();
    expect(body).toEqual({
      period_start: '2025-03-01T00:00:00.000Z',
      period_end: '2025-04-01T00:00:00.000Z',
      requests_used: 5,
      requests_limit: 100_000,
      tokens_used: 25,
      by_specialist: { classify: 0, summarise: 0, extract: 0, qa: 2, chat: 3 },
    });
    const sum = Object.values(body.by_specialist as Record<string, number>).reduce((a, b) => a + b, 0);
    expect(sum).toBe(body.requests_used);
  });
});
