/** The official openai client, only baseURL and apiKey changed: model listing and every error class it raises. */
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingPeriodAt } from '../../protocol/billing-period.ts';
import { DAY_MS, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startServer();
});
afterAll(() => h.close());

const client = (apiKey: string) => new OpenAI({ baseURL: h.baseURL, apiKey });
const ask = (c: OpenAI, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}, opts?: { maxRetries?: number }) =>
  c.chat.completions.create({ model: 'svc-chat', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, ...extra }, opts);

async function caught(p: Promise<unknown>): Promise<APIError> {
  try {
    await p;
  } catch (e) {
    return e as APIError;
  }
  throw new Error('expected the client to raise');
}

describe('openai client', () => {
  it('lists the plan’s models and retrieves one', async () => {
    const c = client(h.key('starter'));
    const ids: string[] = [];
    for await (const m of c.models.list()) ids.push(m.id);
    expect(ids).toEqual(['svc-classify', 'svc-summarise', 'svc-extract', 'svc-qa', 'svc-chat']);
    const m = await c.models.retrieve('gpt-4o-mini');
    expect(m).toMatchObject({ id: 'gpt-4o-mini', object: 'model', owned_by: 'svc' });
  });

  it('raises AuthenticationError for a bad key', async () => {
    const e = await caught(ask(client('svc_live_nope')));
    expect(e).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(e).toMatchObject({ status: 401, type: 'authentication_error', code: 'invalid_api_key' });
    expect(e.requestID).toMatch(/^req_/);
  });

  it('raises PermissionDeniedError for a specialist outside the plan and after the trial', async () => {
    const key = h.key('solo');
    const e = await caught(ask(client(key), { model: 'svc-code' }));
    expect(e).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(e).toMatchObject({ status: 403, type: 'permission_error', code: 'specialist_not_in_plan', param: 'model' });

    const expiring = h.key('solo');
    h.clock.advance(8 * DAY_MS);
    const t = await caught(client(expiring).models.list());
    expect(t).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(t.code).toBe('trial_expired');
  });

  it('raises NotFoundError for an unknown model', async () => {
    const e = await caught(ask(client(h.key('solo', { paid: true })), { model: 'gpt-5-turbo' }));
    expect(e).toBeInstanceOf(OpenAI.NotFoundError);
    expect(e).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
  });

  it('raises BadRequestError naming the parameter', async () => {
    const c = client(h.key('solo', { paid: true }));
    const e = await caught(ask(c, { max_tokens: 5000 }));
    expect(e).toBeInstanceOf(OpenAI.BadRequestError);
    expect(e).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'max_tokens' });
    expect(e.message).toContain("Invalid 'max_tokens': must be at most 4096, got 5000.");
    const t = await caught(ask(c, { temperature: 3 }));
    expect(t).toMatchObject({ status: 400, param: 'temperature' });
  });

  it('raises RateLimitError with Retry-After, after retrying as Retry-After says', async () => {
    const key = h.key('solo', { paid: true });
    const c = client(key);
    // One request, then 19 more 57 s later: the window frees its first place 3 s after the 21st attempt.
    await caught(ask(c, { max_tokens: 5000 }));
    h.clock.advance(57_000);
    for (let i = 1; i < 20; i++) await caught(ask(c, { max_tokens: 5000 }));
    const e = await caught(ask(c, {}, { maxRetries: 0 }));
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e).toMatchObject({ status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(e.headers?.get('retry-after')).toBe('3');

    // The default client waits Retry-After (3 s) before each of its 2 retries; the clock here stands still.
    const started = Date.now();
    const again = await caught(ask(c));
    expect(again).toBeInstanceOf(OpenAI.RateLimitError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(6000);
  }, 30_000);

  it('raises RateLimitError for an exhausted month at once, without retrying for weeks', async () => {
    const key = h.key('enterprise', { rpm: 50, monthly: 1, paid: true });
    const { key: k } = h.admin.resolveKey(key);
    h.app.store.recordUsage({ keyId: k.id, periodStart: billingPeriodAt(h.clock.now()).start, specialist: 'chat', promptTokens: 1, completionTokens: 1 });
    const started = Date.now();
    const e = await caught(ask(client(key)));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e).toMatchObject({ status: 429, type: 'insufficient_quota', code: 'insufficient_quota' });
    expect(Number(e.headers?.get('retry-after'))).toBeGreaterThan(0);
  });
});
