/** Bytes and headers: invalid UTF-8, surrogates, NULs, BOM, content types and encodings, odd JSON, headers. */
import { gzipSync } from 'node:zlib';
import { bearer, CHAT, chatBody, INFER, post, req, type Generator } from '../cases.ts';

const BAD_BYTES = [
  [0xff, 0xfe],
  [0xc0, 0xaf], // overlong '/'
  [0xe2, 0x82], // cut three-byte sequence
  [0xed, 0xa0, 0x80], // a surrogate encoded in UTF-8
  [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
  [0x80, 0x80, 0x80],
  [0xf0, 0x9f, 0x98], // cut emoji
];

const invalidUtf8: Generator = (g) => {
  const bad = Buffer.from(g.rng.pick(BAD_BYTES));
  const [head, tail] = JSON.stringify(chatBody({ messages: [{ role: 'user', content: 'Hi MARK there' }] })).split('MARK');
  const where = g.rng.int(0, 2);
  // In a string the bytes decode to U+FFFD (valid request); outside one they break the JSON.
  const body = where === 0 ? Buffer.concat([Buffer.from(head), bad, Buffer.from(tail)]) : where === 1 ? Buffer.concat([bad, Buffer.from(head + tail)]) : Buffer.concat([Buffer.from(head + tail), bad]);
  return req('encodings', 'encodings/invalid-utf8', post(CHAT, body, g.keys.main), where === 0 ? [200] : [400]);
};

const surrogates: Generator = (g) => {
  const s = g.rng.pick(['\\ud800', '\\udfff', '\\ud800\\ud800', '\\udc00\\ud800', '\\ud83d', 'a\\ud800b'.repeat(50)]);
  const field = g.rng.pick(['content', 'stop', 'model', 'label', 'schema']);
  let text: string;
  if (field === 'content') text = `{"model":"svc-chat","messages":[{"role":"user","content":"x${s}y"}],"max_tokens":4}`;
  else if (field === 'stop') text = `{"model":"svc-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stop":"${s}"}`;
  else if (field === 'model') text = `{"model":"svc-${s}","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`;
  else if (field === 'label') text = `{"specialist":"classify","prompt":"hi","max_tokens":4,"labels":["a${s}","b"]}`;
  else text = `{"specialist":"extract","prompt":"hi","max_tokens":4,"schema":{"type":"object","properties":{"k${s}":{"enum":["v${s}"]}},"required":["k${s}"]}}`;
  const path = field === 'label' || field === 'schema' ? INFER : CHAT;
  return req('encodings', `encodings/lone-surrogate-${field}`, post(path, text, g.keys.main), field === 'model' ? [404] : [200, 400]);
};

const nul: Generator = (g) => {
  const raw = g.rng.bool();
  const text = raw ? `{"model":"svc-chat","messages":[{"role":"user","content":"a\u0000b"}],"max_tokens":4}` : `{"model":"svc-chat","messages":[{"role":"user","content":"a\\u0000b${'\\u0000'.repeat(g.rng.int(1, 500))}"}],"max_tokens":4}`;
  return req('encodings', `encodings/nul-${raw ? 'raw' : 'escaped'}`, post(CHAT, text, g.keys.main), raw ? [400] : [200, 400]);
};

const bom: Generator = (g) => req('encodings', 'encodings/bom', post(CHAT, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(chatBody()))]), g.keys.main), [200, 400]);

const CONTENT_TYPES: (string | null)[] = [null, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'APPLICATION/JSON', 'application/jsonx', 'application/json, text/plain', '', 'x'.repeat(5000)];

const contentType: Generator = (g) => {
  const ct = g.rng.pick(CONTENT_TYPES);
  const headers: [string, string][] = [bearer(g.keys.main)];
  if (ct !== null) headers.push(['Content-Type', ct]);
  const ok = ct !== null && ct.split(';')[0].trim().toLowerCase() === 'application/json';
  return req('encodings', 'encodings/content-type', { method: 'POST', path: CHAT, headers, body: JSON.stringify(chatBody()) }, ok ? [200] : [400]);
};

const contentEncoding: Generator = (g) => {
  const real = g.rng.bool();
  const body = real ? gzipSync(JSON.stringify(chatBody())) : Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const enc = g.rng.pick(['gzip', 'deflate', 'br', 'identity, gzip', 'x'.repeat(300)]);
  return req('encodings', 'encodings/content-encoding', post(CHAT, body, g.keys.main, [['Content-Encoding', enc]]), [400, 415]);
};

const numbers: Generator = (g) => {
  const v = g.rng.pick(['"temperature":1e999', '"temperature":-0', '"seed":-0', '"max_tokens":4.0', '"temperature":-1e-999', '"top_p":1e-400', '"seed":1e999', '"max_tokens":4e0', '"max_tokens":0x10', '"temperature":NaN', '"temperature":.5', '"temperature":+1', '"max_tokens":04']);
  const text = `{"model":"svc-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":4,${v}}`;
  // JSON has no hex, NaN, leading dot, plus or leading zero; 1e999 parses to Infinity; -0 and 4.0 are fine.
  const ok = ['"temperature":-0', '"seed":-0', '"max_tokens":4.0', '"temperature":-1e-999', '"max_tokens":4e0'].includes(v) ? [200] : [400];
  return req('encodings', 'encodings/numbers', post(CHAT, text, g.keys.main), v === '"top_p":1e-400' ? [400] : ok);
};

const duplicateKeys: Generator = (g) => {
  const v = g.rng.pick([
    '{"model":"svc-chat","model":"nope","messages":[{"role":"user","content":"hi"}],"max_tokens":4}',
    '{"model":"svc-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"max_tokens":99999}',
    '{"model":"svc-chat","messages":[{"role":"user","content":"hi"}],"messages":[],"max_tokens":4}',
    '{"model":"svc-chat","messages":[{"role":"user","content":"hi","role":"wizard"}],"max_tokens":4}',
    '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}},"model":"svc-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":4}',
  ]);
  const ok = v.includes('__proto__') ? [200] : v.includes('"nope"') ? [404] : [400];
  return req('encodings', 'encodings/duplicate-keys', post(CHAT, v, g.keys.main), ok);
};

const truncated: Generator = (g) => {
  const text = JSON.stringify(chatBody({ response_format: { type: 'json_object' } }));
  const cut = g.rng.int(1, text.length - 2);
  return req('encodings', 'encodings/truncated-json', post(CHAT, text.slice(0, cut), g.keys.main), [400]);
};

const notObject: Generator = (g) => {
  const text = g.rng.pick(['[]', '[{"model":"svc-chat"}]', '"hello"', 'null', '42', 'true', '', ' \n\t ', '{}', '{"model":"svc-chat"}']);
  const path = g.rng.pick([CHAT, INFER]);
  return req('encodings', 'encodings/not-an-object', post(path, text, g.keys.main), [400, 404]);
};

const longHeader: Generator = (g) => {
  const len = g.rng.logInt(4_000, 200_000);
  const which = g.rng.pick(['X-Junk', 'Authorization', 'x-request-id', 'Content-Type', 'Cookie']);
  const headers: [string, string][] = [['Content-Type', 'application/json'], bearer(g.keys.main)];
  if (which === 'Authorization') headers[1] = ['Authorization', `Bearer ${'k'.repeat(len)}`];
  else headers.push([which, 'v'.repeat(len)]);
  // node:http's header limit is 16 KiB: beyond it 431; below, a long unknown header is ignored.
  return req('encodings', `encodings/long-header-${which}`, { method: 'POST', path: CHAT, headers, body: JSON.stringify(chatBody()) }, [200, 400, 401, 431]);
};

const manyHeaders: Generator = (g) => {
  const n = g.rng.logInt(100, 5000);
  const headers: [string, string][] = [['Content-Type', 'application/json'], bearer(g.keys.main)];
  for (let i = 0; i < n; i++) headers.push([g.rng.bool(0.2) ? 'X-Same' : `X-H${i}`, g.rng.word()]);
  if (g.rng.bool(0.3)) headers.push(['Authorization', 'Bearer second-key']);
  return req('encodings', 'encodings/many-headers', { method: 'POST', path: CHAT, headers, body: JSON.stringify(chatBody()) }, [200, 400, 401, 431]);
};

const framing: Generator = (g) => {
  const body = JSON.stringify(chatBody());
  const v = g.rng.int(0, 6);
  const base: [string, string][] = [['Content-Type', 'application/json'], bearer(g.keys.main)];
  const variants: [string, string][][] = [
    [...base, ['Content-Length', String(body.length)], ['Transfer-Encoding', 'chunked']],
    [...base, ['Content-Length', '-5']],
    [...base, ['Content-Length', 'abc']],
    [...base, ['Content-Length', `${body.length}`], ['Content-Length', `${body.length + 1}`]],
    [...base, ['Transfer-Encoding', 'gzip, chunked']],
    [...base, ['X-Bad', 'a\u0001b']],
    [...base, ['X-Folded', 'a\r\n b']],
  ];
  return req('encodings', 'encodings/framing', { method: 'POST', path: CHAT, headers: variants[v], body, contentLength: v === 5 || v === 6, timeoutMs: 15_000 }, v === 6 ? [200, 400] : [400, 408]);
};

const paths: Generator = (g) => {
  const v = g.rng.pick<[string, string]>([
    ['GET', CHAT],
    ['PUT', INFER],
    ['DELETE', '/v1/models'],
    ['GET', '/v1/../etc/passwd'],
    ['GET', '/v1/models/' + '%'.repeat(50)],
    ['GET', '/v1/models/svc-chat%00'],
    ['GET', '/' + 'a'.repeat(g.rng.logInt(1000, 100_000))],
    ['POST', '/v1/chat/completions/'],
    ['GET', '/health?x=' + 'y'.repeat(2000)],
    ['TRACE', '/health'],
    ['BREW', '/health'],
    ['GET', '*'],
    ['GET', 'http://evil.example/v1/models'],
    ['HEAD', '/health'],
  ]);
  return req('encodings', 'encodings/paths-methods', { method: v[0], path: v[1], headers: [bearer(g.keys.main)] }, [200, 400, 404, 405, 431]);
};

export const encodingGenerators: [Generator, number][] = [
  [invalidUtf8, 3],
  [surrogates, 3],
  [nul, 2],
  [bom, 1],
  [contentType, 2],
  [contentEncoding, 1],
  [numbers, 2],
  [duplicateKeys, 2],
  [truncated, 2],
  [notObject, 1],
  [longHeader, 2],
  [manyHeaders, 1],
  [framing, 2],
  [paths, 2],
];
