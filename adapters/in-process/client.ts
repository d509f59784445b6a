/**
 * The service called from the same process (or a worker), with no HTTP. The method names and shapes are
 * those of the provider's official SDK:
 *   - client.chat.completions.create(req, { signal }): the completion, or with `stream: true` an async
 *     iterable of the same chunk objects an SSE `data:` line carries;
 *   - client.responses.create(req) (the Responses API; `stream: true` gives the `response.*` events);
 *   - client.infer(req), client.models.list(), client.models.retrieve(id), client.usage(), client.health();
 *   - client.files.create({ file, filename, purpose }) / list / retrieve / delete, and
 *     client.fineTuning.jobs.create / list / retrieve / listEvents / cancel (plans with fine-tuning).
 * A request goes through everything an HTTP request does (key, plan, rate limits, quotas, usage,
 * admission, body size and depth limits); a refusal throws ServiceError with the status, the error
 * object and the headers HTTP would send (`retry-after`, rate-limit state). Platform-free.
 */
import type { Outcome, RequestContext, Upload } from '../../protocol/context.ts';
import { ApiError, type ErrorBody } from '../../protocol/errors.ts';
import { randomBase62 } from '../../protocol/ids.ts';
import { silentLogger, type Logger } from '../../protocol/logger.ts';
import type { Operation, Service } from '../../protocol/service.ts';
import { errorHeaders, rateLimitHeaders, type Headers } from '../kit/answer-headers.ts';
import { parseJsonBody } from '../kit/json-body.ts';
import type { RequestObserver } from '../kit/observer.ts';

export type JsonObject = Record<string, unknown>;

export interface ClientOptions {
  /** The key every request is made with (`svc_live_…` or `svc_test_…`). */
  apiKey: string;
  /** Largest request body, as serialized JSON (default 1 MiB, as the HTTP server's). */
  maxBodyBytes?: number;
  logger?: Logger;
  /** Told of every finished request, as the HTTP and WebSocket transports tell theirs (e.g. ServiceMetrics.observe). */
  observe?: RequestObserver;
}

export interface RequestOptions {
  /** Aborting stops the generation and frees its place, as a client disconnecting over HTTP does. */
  signal?: AbortSignal;
}

/** What the service refused, as the provider's SDK reports an APIError. */
export class ServiceError extends Error {
  readonly status: number;
  readonly error: ErrorBody['error'];
  readonly type: string;
  readonly code: string | null;
  readonly param: string | null;
  /** The headers an HTTP response would carry, lower-case: `retry-after`, `x-should-retry`, rate limits. */
  readonly headers: Record<string, string>;

  constructor(status: number, body: ErrorBody, headers: Headers) {
    super(`${status} ${body.error.message}`);
    this.name = 'ServiceError';
    this.status = status;
    this.error = body.error;
    this.type = body.error.type;
    this.code = body.error.code;
    this.param = body.error.param;
    this.headers = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)]));
  }
}

export interface SvcClient {
  chat: {
    completions: {
      create(req: JsonObject & { stream: true }, opts?: RequestOptions): Promise<AsyncIterable<JsonObject>>;
      create(req: JsonObject, opts?: RequestOptions): Promise<JsonObject>;
    };
  };
  responses: {
    create(req: JsonObject & { stream: true }, opts?: RequestOptions): Promise<AsyncIterable<JsonObject>>;
    create(req: JsonObject, opts?: RequestOptions): Promise<JsonObject>;
  };
  infer(req: JsonObject, opts?: RequestOptions): Promise<JsonObject>;
  models: {
    list(opts?: RequestOptions): Promise<JsonObject & { data: JsonObject[] }>;
    retrieve(id: string, opts?: RequestOptions): Promise<JsonObject>;
    /** The account's own fine-tuned model. */
    delete(id: string, opts?: RequestOptions): Promise<JsonObject>;
  };
  usage(opts?: RequestOptions): Promise<JsonObject>;
  health(opts?: RequestOptions): Promise<JsonObject>;
  files: {
    /** `file`: the training JSONL, as text or bytes. */
    create(req: { file: string | Uint8Array; filename?: string; purpose: string }, opts?: RequestOptions): Promise<JsonObject>;
    list(query?: Page & { purpose?: string }, opts?: RequestOptions): Promise<JsonObject & { data: JsonObject[] }>;
    retrieve(id: string, opts?: RequestOptions): Promise<JsonObject>;
    delete(id: string, opts?: RequestOptions): Promise<JsonObject>;
  };
  fineTuning: {
    jobs: {
      create(req: JsonObject, opts?: RequestOptions): Promise<JsonObject>;
      list(query?: Page, opts?: RequestOptions): Promise<JsonObject & { data: JsonObject[] }>;
      retrieve(id: string, opts?: RequestOptions): Promise<JsonObject>;
      listEvents(id: string, query?: Page, opts?: RequestOptions): Promise<JsonObject & { data: JsonObject[] }>;
      cancel(id: string, opts?: RequestOptions): Promise<JsonObject>;
    };
  };
}

/** Cursor pagination of the list methods, as the provider's SDK takes it. */
export interface Page {
  after?: string;
  limit?: number;
}

/** Largest file the in-process client uploads, as the HTTP server's default. */
const MAX_UPLOAD_BYTES = 16 * 1024 * 1024;

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export function createClient(service: Service, opts: ClientOptions): SvcClient {
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const logger = opts.logger ?? silentLogger;

  const context = (body: unknown, params: Record<string, string>, signal: AbortSignal, extra: Pick<RequestContext, 'query' | 'readUpload'> = {}): RequestContext => ({
    ...extra,
    requestId: `req_${randomBase62(24)}`,
    authorization: `Bearer ${opts.apiKey}`,
    // Through JSON, as over HTTP: the handler gets plain data, bounded in size and depth, never the caller's objects.
    readBody: async () => {
      const text = JSON.stringify(body ?? null) ?? 'null';
      return parseJsonBody(text, new TextEncoder().encode(text).byteLength, maxBodyBytes);
    },
    params,
    signal,
    logger,
    record: {},
  });

  /** `detach` unhooks the caller's signal once the request is over (a long-lived signal must not collect listeners). */
  const call = async (op: Operation, body: unknown, params: Record<string, string>, o: RequestOptions = {}, extra?: Pick<RequestContext, 'query' | 'readUpload'>): Promise<{ outcome: Outcome; ctx: RequestContext; detach: () => void }> => {
    // The service watches its own signal; the caller's aborts it.
    const controller = new AbortController();
    const abort = () => controller.abort(o.signal?.reason ?? new Error('aborted by the caller'));
    if (o.signal?.aborted) abort();
    else o.signal?.addEventListener('abort', abort, { once: true });
    const detach = () => o.signal?.removeEventListener('abort', abort);
    const ctx = context(body, params, controller.signal, extra);
    try {
      return { outcome: await service.handle(op, ctx), ctx, detach };
    } catch (e) {
      detach();
      throw e;
    }
  };

  const report = (op: Operation, status: number, startedAt: number, ctx: RequestContext) => opts.observe?.({ transport: 'in-process', endpoint: op, status, startedAt, record: ctx.record });

  const jsonCall = async (op: Operation, body: unknown, params: Record<string, string>, o?: RequestOptions, extra?: Pick<RequestContext, 'query' | 'readUpload'>): Promise<JsonObject> => {
    const startedAt = performance.now();
    const { outcome, ctx, detach } = await call(op, body, params, o, extra);
    detach();
    report(op, outcome.kind === 'json' ? outcome.status : 200, startedAt, ctx);
    if (outcome.kind !== 'json') throw new Error(`${op}: the service answered with a stream`);
    if (outcome.status >= 400) throw new ServiceError(outcome.status, outcome.body as ErrorBody, { ...rateLimitHeaders(outcome.rateLimit), ...(outcome.error ? errorHeaders(outcome.error) : {}) });
    return outcome.body as JsonObject;
  };

  /** As the HTTP adapter: the first event decides between an error and a stream. */
  const streamCall = async (op: Operation, body: JsonObject, o?: RequestOptions): Promise<JsonObject | AsyncIterable<JsonObject>> => {
    const startedAt = performance.now();
    const { outcome, ctx, detach } = await call(op, body, {}, o);
    if (outcome.kind === 'json') {
      detach();
      report(op, outcome.status, startedAt, ctx);
      if (outcome.status >= 400) throw new ServiceError(outcome.status, outcome.body as ErrorBody, { ...rateLimitHeaders(outcome.rateLimit), ...(outcome.error ? errorHeaders(outcome.error) : {}) });
      return outcome.body as JsonObject;
    }
    const events = outcome.events[Symbol.asyncIterator]();
    let status = 200;
    const refuse = (e: unknown) => {
      const f = service.failure(e, ctx, outcome.rateLimit);
      status = f.status;
      return new ServiceError(f.status, f.body as ErrorBody, { ...rateLimitHeaders(outcome.rateLimit), ...errorHeaders(f.error) });
    };
    let first: IteratorResult<object>;
    try {
      first = await events.next();
    } catch (e) {
      detach();
      const err = refuse(e);
      report(op, status, startedAt, ctx);
      throw err;
    }
    return (async function* chunks(): AsyncGenerator<JsonObject> {
      try {
        let step = first;
        while (!step.done) {
          yield step.value as JsonObject;
          step = await events.next();
        }
      } catch (e) {
        throw refuse(e);
      } finally {
        // Stops (and counts) a generation the caller left early; a no-op once the stream has ended.
        await events.return?.();
        detach();
        report(op, status, startedAt, ctx);
      }
    })();
  };

  return {
    chat: { completions: { create: ((req: JsonObject, o?: RequestOptions) => streamCall('chat.completions', req, o)) as SvcClient['chat']['completions']['create'] } },
    responses: { create: ((req: JsonObject, o?: RequestOptions) => streamCall('responses', req, o)) as SvcClient['responses']['create'] },
    infer: (req, o) => jsonCall('infer', req, {}, o),
    models: {
      list: (o) => jsonCall('models.list', undefined, {}, o) as Promise<JsonObject & { data: JsonObject[] }>,
      retrieve: (id, o) => jsonCall('models.retrieve', undefined, { id }, o),
      delete: (id, o) => jsonCall('models.delete', undefined, { id }, o),
    },
    usage: (o) => jsonCall('usage', undefined, {}, o),
    health: (o) => jsonCall('health', undefined, {}, o),
    files: {
      create: (req, o) => jsonCall('files.create', undefined, {}, o, { readUpload: async () => upload(req) }),
      list: (q, o) => jsonCall('files.list', undefined, {}, o, { query: query(q) }) as Promise<JsonObject & { data: JsonObject[] }>,
      retrieve: (id, o) => jsonCall('files.retrieve', undefined, { id }, o),
      delete: (id, o) => jsonCall('files.delete', undefined, { id }, o),
    },
    fineTuning: {
      jobs: {
        create: (req, o) => jsonCall('fine_tuning.jobs.create', req, {}, o),
        list: (q, o) => jsonCall('fine_tuning.jobs.list', undefined, {}, o, { query: query(q) }) as Promise<JsonObject & { data: JsonObject[] }>,
        retrieve: (id, o) => jsonCall('fine_tuning.jobs.retrieve', undefined, { id }, o),
        listEvents: (id, q, o) => jsonCall('fine_tuning.jobs.events', undefined, { id }, o, { query: query(q) }) as Promise<JsonObject & { data: JsonObject[] }>,
        cancel: (id, o) => jsonCall('fine_tuning.jobs.cancel', undefined, { id }, o),
      },
    },
  };
}

/** A file handed over in the call, as the multipart parser would give it; bounded as an HTTP upload is. */
function upload(req: { file: string | Uint8Array; filename?: string; purpose: string }): Upload {
  const bytes = typeof req.file === 'string' ? new TextEncoder().encode(req.file) : req.file;
  if (!(bytes instanceof Uint8Array)) throw new ApiError(400, 'invalid_request_error', "'file' must be text or bytes (a Uint8Array).", { param: 'file' });
  if (bytes.byteLength > MAX_UPLOAD_BYTES) throw new ApiError(413, 'invalid_request_error', `The upload is larger than the ${MAX_UPLOAD_BYTES} bytes this server accepts for a file.`, { code: 'request_too_large' });
  return { fields: req.purpose === undefined ? {} : { purpose: String(req.purpose) }, file: { field: 'file', filename: String(req.filename ?? 'upload.jsonl'), contentType: 'application/jsonl', bytes: new Uint8Array(bytes) } };
}

function query(page: (Page & { purpose?: string }) | undefined): Record<string, string> {
  const q: Record<string, string> = {};
  for (const [k, v] of Object.entries(page ?? {})) if (v !== undefined && v !== null) q[k] = String(v);
  return q;
}
