import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../protocol/keys.ts';
import { bearer, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startServer();
});
afterAll(() => h.close());

async function expect401(headers: Record<string, string>, message: string) {
  const res = await fetch(`${h.baseURL}/models`, { headers });
  expect(res.status).toBe(401);
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('x-ratelimit-limit-requests')).toBeNull();
  const body = await res.json();
  expect(body).toEqual({ error: { message: expect.stringContaining(message), type: 'authentication_error', param: null, code: 'invalid_api_key' } });
}

describe('authentication', () => {
  it('answers a missing key with 401 invalid_api_key', async () => {
    await expect401({}, "You didn't provide an API key");
    await expect401({ authorization: '' }, "You didn't provide an API key");
  });

  it('answers a malformed header, an unknown key and a wrong secret with 401', async () => {
    const real = h.key();
    await expect401({ authorization: real }, "must be 'Bearer YOUR_KEY'");
    await expect401({ authorization: `Basic ${real}` }, "must be 'Bearer YOUR_KEY'");
    await expect401(bearer('svc_live_short'), 'Incorrect API key provided.');
    await expect401(bearer(generateKey('live').key), 'Incorrect API key provided.');
    // Same public prefix, different secret: found by prefix, refused by the hash.
    const forged = real.slice(0, 17) + generateKey('live').key.slice(17);
    await expect401(bearer(forged), 'Incorrect API key provided.');
  });

  it('accepts the key with any case of "Bearer" and surrounding space', async () => {
    const key = h.key();
    for (const authorization of [`Bearer ${key}`, `bearer ${key}`, `BEARER   ${key} `]) {
      const res = await fetch(`${h.baseURL}/models`, { headers: { authorization } });
      expect(res.status).toBe(200);
    }
  });

  it('refuses a revoked key at once', async () => {
    const key = h.key();
    expect((await fetch(`${h.baseURL}/usage`, { headers: bearer(key) })).status).toBe(200);
    h.admin.revokeKey(h.admin.resolveKey(key).key.id, h.clock.now());
    await expect401(bearer(key), 'This API key has been revoked.');
  });

  it('needs no key for /health, and every other endpoint needs one', async () => {
    expect((await fetch(`${h.url}/health`)).status).toBe(200);
    for (const [method, path] of [['POST', '/v1/chat/completions'], ['POST', '/v1/infer'], ['GET', '/v1/models'], ['GET', '/v1/models/svc-chat'], ['GET', '/v1/usage']]) {
      const res = await fetch(h.url + path, { method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined });
      expect(res.status, path).toBe(401);
    }
  });

  it('never writes keys to the logs', async () => {
    const key = h.key();
    await fetch(`${h.baseURL}/models`, { headers: bearer(key) });
    await fetch(`${h.baseURL}/models`, { headers: bearer(key.slice(0, -1) + 'x') });
    const text = h.logs.join('\n');
    expect(text).toContain(key.slice(0, 17));
    expect(text).not.toContain(key.slice(17));
    expect(text).not.toContain(key.slice(0, -1));
  });
});
