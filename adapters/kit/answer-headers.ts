/**
 * The response headers every transport reports with an answer (as HTTP headers, or in a WebSocket
 * frame's `headers`, or on the in-process client's ServiceError): the key's rate-limit state and an
 * error's retry hints, as the provider's clients read them.
 */
import type { ApiError } from '../../protocol/errors.ts';
import { randomBase62 } from '../../protocol/ids.ts';
import type { RateLimitState } from '../../protocol/rate-limiter.ts';

export type Headers = Record<string, string | number | string[]>;

export function rateLimitHeaders(s: RateLimitState | undefined): Headers {
  if (!s) return {};
  return {
    'x-ratelimit-limit-requests': s.limit,
    'x-ratelimit-remaining-requests': s.remaining,
    'x-ratelimit-reset-requests': formatDuration(s.resetMs),
  };
}

export function errorHeaders(e: ApiError): Headers {
  const h: Headers = {};
  if (e.retryAfterSeconds !== undefined) h['retry-after'] = String(e.retryAfterSeconds);
  // The provider's SDKs retry 429s by default; an exhausted month must not be retried for weeks.
  if (e.retryable === false) h['x-should-retry'] = 'false';
  return h;
}

/** Durations as the provider writes them: `250ms`, `3s`, `2.4s`, `1m30s`. */
export function formatDuration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  if (ms < 60_000) return `${trim(ms / 1000)}s`;
  const m = Math.floor(ms / 60_000);
  return `${m}m${trim((ms - m * 60_000) / 1000)}s`;
}

function trim(seconds: number): string {
  return String(Math.round(seconds * 1000) / 1000);
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;

/** The client's `x-request-id` when it is short and plain, else a fresh one. */
export function requestIdFor(given: string | string[] | null | undefined): string {
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
