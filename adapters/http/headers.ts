/** The CORS preflight answer (the headers on every answer are in adapters/kit/answer-headers.ts). */
import type { IncomingMessage } from 'node:http';
import type { Headers } from '../kit/answer-headers.ts';

const TOKEN_LIST = /^\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*\s*$/;
const DEFAULT_ALLOWED = 'authorization, content-type, x-request-id';

/** Preflight answer: the requested headers are allowed (the provider's SDKs send many x-stainless-* ones). */
export function preflightHeaders(req: IncomingMessage): Headers {
  const asked = req.headers['access-control-request-headers'];
  return {
    'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
    'access-control-allow-headers': typeof asked === 'string' && TOKEN_LIST.test(asked) && asked.length <= 2000 ? asked : DEFAULT_ALLOWED,
    'access-control-max-age': '86400',
    vary: 'Access-Control-Request-Headers',
  };
}
