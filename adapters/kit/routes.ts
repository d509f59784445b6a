/** Which method and path reach which service operation: the same table for HTTP, WebSocket request frames and the service worker. */
import type { Operation } from '../../protocol/service.ts';
import { ApiError } from '../../protocol/errors.ts';

interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  pattern: RegExp;
  op: Operation;
}

const ROUTES: readonly Route[] = [
  { method: 'GET', pattern: /^\/health$/, op: 'health' },
  { method: 'POST', pattern: /^\/v1\/chat\/completions$/, op: 'chat.completions' },
  { method: 'POST', pattern: /^\/v1\/responses$/, op: 'responses' },
  { method: 'POST', pattern: /^\/v1\/infer$/, op: 'infer' },
  { method: 'GET', pattern: /^\/v1\/models$/, op: 'models.list' },
  { method: 'GET', pattern: /^\/v1\/models\/(?<id>[^/]+)$/, op: 'models.retrieve' },
  { method: 'DELETE', pattern: /^\/v1\/models\/(?<id>[^/]+)$/, op: 'models.delete' },
  { method: 'GET', pattern: /^\/v1\/usage$/, op: 'usage' },
  { method: 'POST', pattern: /^\/v1\/files$/, op: 'files.create' },
  { method: 'GET', pattern: /^\/v1\/files$/, op: 'files.list' },
  { method: 'GET', pattern: /^\/v1\/files\/(?<id>[^/]+)$/, op: 'files.retrieve' },
  { method: 'DELETE', pattern: /^\/v1\/files\/(?<id>[^/]+)$/, op: 'files.delete' },
  { method: 'POST', pattern: /^\/v1\/fine_tuning\/jobs$/, op: 'fine_tuning.jobs.create' },
  { method: 'GET', pattern: /^\/v1\/fine_tuning\/jobs$/, op: 'fine_tuning.jobs.list' },
  { method: 'GET', pattern: /^\/v1\/fine_tuning\/jobs\/(?<id>[^/]+)$/, op: 'fine_tuning.jobs.retrieve' },
  { method: 'GET', pattern: /^\/v1\/fine_tuning\/jobs\/(?<id>[^/]+)\/events$/, op: 'fine_tuning.jobs.events' },
  { method: 'POST', pattern: /^\/v1\/fine_tuning\/jobs\/(?<id>[^/]+)\/cancel$/, op: 'fine_tuning.jobs.cancel' },
];

/** Query-string parameters (the first value of each name), for the list endpoints' `after` and `limit`. */
export function parseQuery(search: string): Record<string, string> {
  const out: Record<string, string> = {};
  // Bounded: a query of thousands of parameters is not read past the first few dozen.
  let n = 0;
  for (const [k, v] of new URLSearchParams(search.slice(0, 4096))) {
    if (++n > 32) break;
    if (!Object.hasOwn(out, k)) out[k] = v;
  }
  return out;
}

export type RouteMatch =
  | { kind: 'found'; op: Operation; params: Record<string, string> }
  | { kind: 'wrong-method'; allow: string[] }
  | { kind: 'not-found' };

export function matchRoute(method: string, path: string): RouteMatch {
  // HEAD is GET without a body (node:http drops it).
  const m = method === 'HEAD' ? 'GET' : method;
  const onPath = ROUTES.map((r) => ({ r, match: r.pattern.exec(path) })).filter((x) => x.match);
  if (onPath.length === 0) return { kind: 'not-found' };
  const hit = onPath.find((x) => x.r.method === m);
  if (!hit) return { kind: 'wrong-method', allow: [...new Set(onPath.flatMap((x) => (x.r.method === 'GET' ? ['GET', 'HEAD'] : [x.r.method])))] };
  const params: Record<string, string> = {};
  for (const [k, v] of Object.entries(hit.match!.groups ?? {})) params[k] = safeDecode(v);
  return { kind: 'found', op: hit.r.op, params };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The refusal for a path no route takes (404) or a method its routes do not take (405), in the provider's words. */
export function routeError(match: Exclude<RouteMatch, { kind: 'found' }>, method: string, path: string): ApiError {
  if (match.kind === 'not-found') return new ApiError(404, 'invalid_request_error', `Unknown request URL: ${method} ${path}. Check the URL for typos.`, { code: 'unknown_url' });
  return new ApiError(405, 'invalid_request_error', `${method} is not allowed on ${path}; use ${match.allow.filter((m) => m !== 'HEAD').join(' or ')}.`, { code: 'method_not_allowed' });
}
