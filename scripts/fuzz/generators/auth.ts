/** Keys: missing, malformed, unknown, revoked, in the wrong place; plans without the specialist or feature. */
import { CHAT, chatBody, INFER, inferBody, post, req, type Generator } from '../cases.ts';

const badAuth: Generator = (g) => {
  const k = g.keys.main;
  const header = g.rng.pick<string | null>([
    null,
    'Bearer',
    'Bearer ',
    `Basic ${Buffer.from(`user:${k}`).toString('base64')}`,
    `Bearer  ${k}`,
    `Bearer ${k}x`,
    `Bearer ${k.slice(0, -1)}`,
    `Bearer ${k.replace('svc_live_', 'svc_test_')}`,
    `Bearer svc_live_${'A'.repeat(32)}`,
    `Bearer ${g.keys.revoked}`,
    `Bearer ${k}, Bearer ${k}`,
    `Token ${k}`,
    k,
    `Bearer ${'é'.repeat(20)}`,
    `Bearer ${k.toUpperCase()}`,
  ]);
  const headers: [string, string][] = [['Content-Type', 'application/json']];
  if (header !== null) headers.push(['Authorization', header]);
  const path = g.rng.pick([CHAT, INFER, '/v1/models', '/v1/usage']);
  const get = path === '/v1/models' || path === '/v1/usage';
  const body = path === INFER ? JSON.stringify(inferBody('chat')) : JSON.stringify(chatBody());
  // `bearer` in any case is the scheme's spelling; a double space is tolerated by some servers.
  const maybeOk = header === `Bearer  ${k}`;
  return req('auth', 'auth/bad-authorization', { method: get ? 'GET' : 'POST', path, headers, body: get ? undefined : body }, maybeOk ? [200, 401] : [401]);
};

const keyElsewhere: Generator = (g) => {
  const k = g.keys.main;
  const v = g.rng.int(0, 2);
  const r =
    v === 0
      ? { method: 'POST', path: `${CHAT}?api_key=${k}`, headers: [['Content-Type', 'application/json']] as [string, string][], body: JSON.stringify(chatBody()) }
      : v === 1
        ? { method: 'POST', path: CHAT, headers: [['Content-Type', 'application/json'], ['x-api-key', k]] as [string, string][], body: JSON.stringify(chatBody()) }
        : { method: 'POST', path: CHAT, headers: [['Content-Type', 'application/json'], ['Cookie', `key=${k}`]] as [string, string][], body: JSON.stringify(chatBody()) };
  return req('auth', 'auth/key-not-in-header', r, [401]);
};

const planLimits: Generator = (g) => {
  const v = g.rng.int(0, 3);
  const key = g.keys.solo;
  const r = [
    post(INFER, inferBody('code'), key),
    post(CHAT, chatBody({ model: 'svc-extract' }), key),
    post(CHAT, chatBody({ response_format: { type: 'json_object' } }), key),
    post(INFER, inferBody('extract', { schema: { type: 'object' } }), key),
  ][v];
  // Solo allows 20 requests a minute: past them, 429 comes first.
  return req('auth', 'auth/not-in-plan', r, [403, 429]);
};

const sandbox: Generator = (g) => req('auth', 'auth/sandbox-key-usage', { method: 'GET', path: g.rng.pick(['/v1/usage', '/v1/models', '/v1/models/svc-code', '/v1/models/gpt-4o-2024-08-06', '/v1/models/nope']), headers: [['Authorization', `Bearer ${g.rng.pick([g.keys.sandbox, g.keys.professional])}`]] }, [200, 404]);

export const authGenerators: [Generator, number][] = [
  [badAuth, 5],
  [keyElsewhere, 1],
  [planLimits, 1],
  [sandbox, 1],
];
