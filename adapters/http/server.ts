/**
 * The HTTP transport (node:http, no framework): routes to service operations, JSON and SSE responses,
 * CORS, request ids, access logs, client disconnects → aborted generations, and a graceful drain.
 * Everything about what a request means lives in protocol/.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Outcome, RequestContext, RequestRecord } from '../../protocol/context.ts';
import { ApiError, invalidRequest, requestTimeout, shuttingDown } from '../../protocol/errors.ts';
import type { Service } from '../../protocol/service.ts';
import { readJsonBody } from './body.ts';
import { DEFAULT_MULTIPART_LIMITS, readUpload } from './multipart.ts';
import { applyConnectionLimits, DEFAULT_CONNECTION_LIMITS, serverOptions, type ConnectionLimits } from './connection-limits.ts';
import { preflightHeaders } from './headers.ts';
import type { StaticAssets } from './static-assets.ts';
import { CORS_HEADERS, errorHeaders, rateLimitHeaders, requestIdFor, type Headers } from '../kit/answer-headers.ts';
import type { HttpLogger } from './logger.ts';
import { matchRoute, parseQuery, routeError } from '../kit/routes.ts';
import { InFlight, pumpStream } from '../kit/lifecycle.ts';
import { Readiness, type RequestObserver } from '../kit/observer.ts';
import { SSE_HEADERS, sseEvent } from '../kit/sse.ts';
import { writeEvent } from './sse.ts';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** Readiness for load balancers: 503 while the model loads or the server drains (GET /health stays 200). */
export const READY_PATH = '/ready';

export interface HttpServerOptions {
  service: Service;
  logger: HttpLogger;
  /** Largest request body accepted (413 above). Default 1 MiB. */
  maxBodyBytes?: number;
  /** Largest file upload (multipart body) accepted on POST /v1/files (413 above). Default 16 MiB. */
  maxUploadBytes?: number;
  /** Connection cap, timeouts and keep-alive; each defaults to DEFAULT_CONNECTION_LIMITS'. */
  connections?: Partial<ConnectionLimits>;
  /** Files served beside the API (the playground); none by default. */
  ui?: StaticAssets;
  /** Told of every finished request (metrics). */
  observe?: RequestObserver;
  /** Answers `GET /ready` (200 or 503); without it /ready is 200 whenever the server is not draining. */
  readiness?: Readiness;
}

/** At most one log line per this many ms about connections refused over the cap (a flood must not flood the log). */
const DROP_LOG_INTERVAL_MS = 10_000;

export class HttpServer {
  readonly server: Server;
  private readonly service: Service;
  private readonly logger: HttpLogger;
  private readonly maxBodyBytes: number;
  private readonly maxUploadBytes: number;
  private readonly ui: StaticAssets | undefined;
  private readonly observe: RequestObserver | undefined;
  private readonly readiness: Readiness;
  private draining = false;
  /** The requests in progress; aborting one's controller stops its generation. */
  private readonly inFlight = new InFlight();
  private dropped = 0;
  private dropLoggedAt = -Infinity;

  constructor(opts: HttpServerOptions) {
    this.service = opts.service;
    this.logger = opts.logger;
    this.maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.maxUploadBytes = opts.maxUploadBytes ?? DEFAULT_MULTIPART_LIMITS.maxBytes;
    this.ui = opts.ui;
    this.observe = opts.observe;
    this.readiness = opts.readiness ?? new Readiness();
    if (!opts.readiness) this.readiness.modelLoaded();
    const limits = { ...DEFAULT_CONNECTION_LIMITS, ...opts.connections };
    this.server = createServer(serverOptions(limits), (req, res) => {
      this.handle(req, res).catch((e) => {
        // handle() answers every failure itself; reaching here is a bug, never a reason to crash.
        this.logger.error({ err: e }, 'unhandled error in request handler');
        if (!res.headersSent) this.sendJson(res, 500, { error: { message: 'internal error', type: 'server_error', param: null, code: 'server_error' } }, {});
        else res.destroy();
      });
    });
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.clientError(err, socket));
    applyConnectionLimits(this.server, limits);
    this.server.on('drop', () => this.connectionDropped(limits.maxConnections));
  }

  async listen(port: number, host: string): Promise<{ url: string; host: string; port: number }> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ port, host }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const addr = this.server.address() as AddressInfo;
    const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return { url: `http://${h}:${addr.port}`, host: addr.address, port: addr.port };
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /**
   * Stops taking work: new requests get 503 while in-flight ones finish (up to `graceMs`, then they are
   * aborted), then the listener and all connections close.
   */
  async shutdown(graceMs = 30_000): Promise<void> {
    this.draining = true;
    this.readiness.drain();
    await this.inFlight.drain(graceMs, this.logger, 'http');
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const requestId = requestIdFor(req.headers['x-request-id']);
    const log = this.logger.child({ reqId: requestId });
    const [path, search = ''] = (req.url ?? '/').split(/\?(.*)/s);
    const base: Headers = { 'x-request-id': requestId, ...CORS_HEADERS };
    const record: RequestRecord = {};
    let endpoint = 'unknown';
    res.once('close', () => {
      // Readiness probes come every few seconds from each load balancer: kept out of the info log.
      const line = { method: req.method, path, status: res.statusCode, ms: Math.round(performance.now() - started), completed: res.writableFinished, ...record };
      if (path === READY_PATH) log.debug(line, 'request');
      else log.info(line, 'request');
      this.observe?.({ transport: 'http', endpoint, status: res.statusCode, startedAt: started, record });
    });
    if (path === READY_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
      const state = this.readiness.state;
      return this.sendJson(res, state.ready ? 200 : 503, state, { ...base, 'cache-control': 'no-store' });
    }

    if (this.draining) return this.sendError(res, shuttingDown(), base);
    if (this.ui?.serve(req.method, path, res)) return;
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...base, ...preflightHeaders(req) });
      res.end();
      return;
    }
    const route = matchRoute(req.method ?? 'GET', path);
    if (route.kind !== 'found') return this.sendError(res, routeError(route, req.method ?? 'GET', path), route.kind === 'wrong-method' ? { ...base, allow: route.allow.join(', ') } : base);

    endpoint = route.op;
    const request = this.inFlight.begin();
    const controller = request.controller;
    // Done when the handler has returned (usage counted) and the response is out or the client gone:
    // a drain must neither cut a response short nor close the database under a request.
    let parts = 2;
    const done = () => {
      if (--parts === 0) request.done();
    };
    res.once('close', () => {
      // Closed before the response finished: the client went away, so its generation stops.
      if (!res.writableFinished) controller.abort(new Error('client disconnected'));
      done();
    });
    let body: Promise<unknown> | undefined;
    let upload: ReturnType<typeof readUpload> | undefined;
    const ctx: RequestContext = {
      requestId,
      authorization: req.headers.authorization,
      readBody: () => (body ??= readJsonBody(req, this.maxBodyBytes)),
      readUpload: () => (upload ??= readUpload(req, { ...DEFAULT_MULTIPART_LIMITS, maxBytes: this.maxUploadBytes })),
      params: route.params,
      query: parseQuery(search),
      signal: controller.signal,
      logger: log,
      record,
    };
    try {
      const outcome = await this.service.handle(route.op, ctx);
      if (outcome.kind === 'json') {
        const headers = { ...base, ...rateLimitHeaders(outcome.rateLimit), ...(outcome.error ? errorHeaders(outcome.error) : {}) };
        this.sendJson(res, outcome.status, outcome.body, headers, !req.complete);
      } else {
        await this.sendStream(res, outcome, ctx, base);
      }
    } finally {
      done();
    }
  }

  /** Waits for the first event before committing to 200, so checks that fail up to then answer with their own status. */
  private async sendStream(res: ServerResponse, outcome: Outcome & { kind: 'stream' }, ctx: RequestContext, base: Headers): Promise<void> {
    await pumpStream(this.service, outcome, ctx, {
      refuse: (f) => this.sendJson(res, f.status, f.body, { ...base, ...rateLimitHeaders(outcome.rateLimit), ...errorHeaders(f.error) }),
      open: () => {
        res.writeHead(200, { ...base, ...rateLimitHeaders(outcome.rateLimit), ...SSE_HEADERS });
        res.flushHeaders();
      },
      send: (event) => writeEvent(res, event),
      end: () => res.end(sseEvent('[DONE]')),
      // Mid-stream the status is sent; the provider's SDKs raise an `error` event as an APIError. Sent
      // whenever the client is still there, an interruption by the server included: ending without it
      // would look like a stream that merely lost its last events.
      fail: (f) => {
        if (!res.destroyed && !res.writableEnded) res.end(sseEvent(f.body));
      },
    });
  }

  private connectionDropped(max: number): void {
    this.dropped++;
    const now = performance.now();
    if (now - this.dropLoggedAt < DROP_LOG_INTERVAL_MS) return;
    this.logger.warn({ dropped: this.dropped, maxConnections: max }, 'connections refused: the connection cap is reached');
    this.dropLoggedAt = now;
    this.dropped = 0;
  }

  private sendError(res: ServerResponse, err: ApiError, headers: Headers): void {
    this.sendJson(res, err.status, err.toBody(), { ...headers, ...errorHeaders(err) });
  }

  private sendJson(res: ServerResponse, status: number, body: unknown, headers: Headers, closeAfter = false): void {
    if (res.headersSent || res.destroyed) return;
    const text = JSON.stringify(body);
    const h: Headers = { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) };
    // An unread body (413) or a drain: do not keep the connection for another request.
    if (closeAfter || this.draining) h.connection = 'close';
    res.writeHead(status, h);
    res.end(text);
  }

  private clientError(err: NodeJS.ErrnoException, socket: Socket): void {
    // A response already under way on this socket cannot be replaced by another.
    const answering = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage?.headersSent === true;
    if (err.code === 'ECONNRESET' || !socket.writable || answering) {
      socket.destroy();
      return;
    }
    const [status, reason, error] = clientErrorAnswer(err.code);
    const text = JSON.stringify(error.toBody());
    socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
  }
}

/** node:http's parser and timeout errors as the status line and error body to answer with. */
function clientErrorAnswer(code: string | undefined): [number, string, ApiError] {
  if (code === 'HPE_HEADER_OVERFLOW') return [431, 'Request Header Fields Too Large', invalidRequest('The request headers are too large.')];
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'Request Timeout', requestTimeout()];
  return [400, 'Bad Request', invalidRequest('Malformed HTTP request.')];
}

