/**
 * The API as a fetch handler, Request in and Response out, for a service worker's `fetch` event (and the
 * dedicated-worker fallback): the same routes, status codes, JSON bodies, headers and SSE bytes as the
 * Node server. A stream is a ReadableStream that pulls one event at a time (the reader's pace is the
 * generation's backpressure); the page aborting its fetch or cancelling the body stops the generation.
 */
import type { Outcome, RequestContext, RequestRecord } from '../../protocol/context.ts';
import type { ApiError } from '../../protocol/errors.ts';
import type { Logger } from '../../protocol/logger.ts';
import type { Service } from '../../protocol/service.ts';
import { CORS_HEADERS, errorHeaders, rateLimitHeaders, requestIdFor, type Headers } from '../kit/answer-headers.ts';
import { parseJsonBody, requireJsonContentType, tooLarge } from '../kit/json-body.ts';
import { InFlight, pumpStream, type Failure } from '../kit/lifecycle.ts';
import { matchRoute, routeError } from '../kit/routes.ts';
import { SSE_HEADERS, sseEvent } from '../kit/sse.ts';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export interface FetchHandlerOptions {
  service: Service;
  logger: Logger;
  maxBodyBytes?: number;
}

export type FetchHandler = ((request: Request, path: string) => Promise<Response>) & { inFlight: InFlight };

/** `path`: the request's path relative to where the API is mounted (`/v1/models`, `/health`). */
export function createFetchHandler(opts: FetchHandlerOptions): FetchHandler {
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const inFlight = new InFlight();
  const handler = async (request: Request, path: string): Promise<Response> => {
    const requestId = requestIdFor(request.headers.get('x-request-id'));
    const base: Headers = { 'x-request-id': requestId, ...CORS_HEADERS };
    const method = request.method.toUpperCase();
    if (method === 'OPTIONS') return new Response(null, { status: 204, headers: toHeaders({ ...base, 'access-control-allow-methods': 'GET, POST, OPTIONS', 'access-control-allow-headers': request.headers.get('access-control-request-headers') ?? 'authorization, content-type' }) });
    const route = matchRoute(method, path);
    if (route.kind !== 'found') return errorResponse(routeError(route, method, path), route.kind === 'wrong-method' ? { ...base, allow: route.allow.join(', ') } : base);

    const tracked = inFlight.begin();
    const { controller } = tracked;
    const onAbort = () => controller.abort(new Error('the page aborted the request'));
    if (request.signal.aborted) onAbort();
    else request.signal.addEventListener('abort', onAbort, { once: true });
    const finish = () => {
      request.signal.removeEventListener('abort', onAbort);
      tracked.done();
    };
    const record: RequestRecord = {};
    const log = opts.logger;
    const ctx: RequestContext = {
      requestId,
      authorization: request.headers.get('authorization') ?? undefined,
      readBody: () => readBody(request, maxBodyBytes),
      params: route.params,
      signal: controller.signal,
      logger: log,
      record,
    };
    let outcome: Outcome;
    try {
      outcome = await opts.service.handle(route.op, ctx);
    } catch (e) {
      finish();
      throw e;
    }
    if (outcome.kind === 'json') {
      finish();
      const headers = { ...base, ...rateLimitHeaders(outcome.rateLimit), ...(outcome.error ? errorHeaders(outcome.error) : {}) };
      return jsonResponse(outcome.status, outcome.body, headers, method === 'HEAD');
    }
    return streamResponse(opts.service, outcome, ctx, base, controller, finish);
  };
  return Object.assign(handler, { inFlight });
}

/**
 * Runs pumpStream into a ReadableStream: the Response is returned once the first event (or a refusal)
 * is there, so an error before it still gets its own status, as over HTTP.
 */
function streamResponse(service: Service, outcome: Outcome & { kind: 'stream' }, ctx: RequestContext, base: Headers, controller: AbortController, finish: () => void): Promise<Response> {
  const encoder = new TextEncoder();
  return new Promise<Response>((resolve) => {
    let sink: ReadableStreamDefaultController<Uint8Array>;
    // One event waits for each pull: the generation goes no faster than the page reads.
    let pulled: (() => void) | undefined;
    let wanted = 0;
    let closed = false;
    const body = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          sink = c;
        },
        pull: () => {
          wanted++;
          pulled?.();
        },
        cancel: () => {
          closed = true;
          controller.abort(new Error('the page cancelled the response body'));
          pulled?.();
        },
      },
      { highWaterMark: 1 },
    );
    const waitForPull = async (): Promise<boolean> => {
      while (wanted === 0 && !closed) await new Promise<void>((r) => (pulled = r));
      pulled = undefined;
      wanted = Math.max(0, wanted - 1);
      return !closed;
    };
    const enqueue = (text: string) => {
      if (!closed) sink.enqueue(encoder.encode(text));
    };
    void pumpStream(service, outcome, ctx, {
      refuse: (f: Failure) => resolve(jsonResponse(f.status, f.body, { ...base, ...rateLimitHeaders(outcome.rateLimit), ...errorHeaders(f.error) })),
      open: () => resolve(new Response(body, { status: 200, headers: toHeaders({ ...base, ...rateLimitHeaders(outcome.rateLimit), ...SSE_HEADERS }) })),
      send: async (event) => {
        if (!(await waitForPull())) return false;
        enqueue(sseEvent(event));
        return true;
      },
      end: () => {
        enqueue(sseEvent('[DONE]'));
        if (!closed) sink.close();
        closed = true;
      },
      fail: (f) => {
        enqueue(sseEvent(f.body));
        if (!closed) sink.close();
        closed = true;
      },
    }).finally(finish);
  });
}

async function readBody(request: Request, limit: number): Promise<unknown> {
  requireJsonContentType(request.headers.get('content-type'));
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  if (!request.body) return parseJsonBody('', 0, limit);
  // Read in pieces so an oversized body is refused at the limit, not after it is all in memory.
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.byteLength;
  }
  return parseJsonBody(new TextDecoder().decode(bytes), size, limit);
}

function errorResponse(err: ApiError, headers: Headers): Response {
  return jsonResponse(err.status, err.toBody(), { ...headers, ...errorHeaders(err) });
}

function jsonResponse(status: number, body: unknown, headers: Headers, head = false): Response {
  const text = JSON.stringify(body);
  return new Response(head ? null : text, { status, headers: toHeaders({ ...headers, 'content-type': 'application/json' }) });
}

function toHeaders(h: Headers): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]));
}
