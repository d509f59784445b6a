/** Response headers the provider's clients read: request id, rate-limit state, retry hints, CORS. */
import type { IncomingMessage } from 'node:http';
import { randomBase62 } from '../../protocol/ids.ts';
import type { Headers } from '../kit/answer-headers.ts';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;

/** The client's `x-request-id` when it is short and plain, else a fresh one. */
export function requestIdFor(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : `req_${randomBase62(24)}`;
}

export const EXPOSED_HEADERS = [
  'x-request-id',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'retry-after',
  'x-should-retry',
].join(', ');

/** On every response: any origin may call (keys are bearer tokens, never cookies). */
export const CORS_HEADERS: Headers = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': EXPOSED_HEADERS,
};

const TOKEN_LIST = /^\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*\s*$/;
const DEFAULT_ALLOWED = 'authorization, content-type, x-request-id';

/** Preflight answer: the requested headers are allowed (the provider's SDKs send many x-stainless-* ones). */
export function preflightHeaders(req: IncomingMessage): Headers {
  const asked = req.headers['access-control-request-headers'];
  return {
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': typeof asked === 'string' && TOKEN_LIST.test(asked) && asked.length <= 2000 ? asked : DEFAULT_ALLOWED,
    'access-control-max-age': '86400',
    vary: 'Access-Control-Request-Headers',
  };
}
