/**
 * The WebSocket transport on the HTTP server's port, path /v1/ws (message protocol in messages.ts and
 * docs/api.md). The key is checked once at the upgrade (Authorization header, or the subprotocol
 * `svc-api-key.<key>` for browsers, which cannot set headers; never the URL); every request on the
 * connection then goes through the service as an HTTP request does (authentication, limits, usage),
 * so both transports count against the same key. Many requests run at once on one connection, each
 * under its own id; `cancel` stops one. A client that stops reading gets its streams paused, then its
 * connection closed (4008) before its backlog can grow without bound.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Outcome, RequestContext, RequestRecord } from '../../protocol/context.ts';
import { ApiError, invalidRequest, shuttingDown } from '../../protocol/errors.ts';
import { randomBase62 } from '../../protocol/ids.ts';
import { findDepthExcess } from '../../protocol/json-depth.ts';
import type { Service } from '../../protocol/service.ts';
import { errorHeaders, rateLimitHeaders, type Headers } from '../kit/answer-headers.ts';
import type { HttpLogger } from '../http/logger.ts';
import { matchRoute, parseQuery, routeError } from '../kit/routes.ts';
import { parseJsonBody } from '../kit/json-body.ts';
import { InFlight, pumpStream, sleep, type Failure } from '../kit/lifecycle.ts';
import type { RequestObserver } from '../kit/observer.ts';
import { clientMessageSchema, WS_CLOSE, WS_KEY_PROTOCOL_PREFIX, WS_PATH, WS_SUBPROTOCOL, type ServerMessage } from './messages.ts';

export interface WsLimits {
  /** Open WebSocket connections at most (the upgrade gets 503 beyond). */
  maxConnections: number;
  /** Requests in flight on one connection at most (more get an `error` frame, 429). */
  maxInFlightPerConnection: number;
  /** Largest frame accepted (close 1009 beyond); also the largest request body. */
  maxFrameBytes: number;
  /** Bytes waiting to be sent to one client above which its streams wait for it to read. */
  pauseBufferedBytes: number;
  /** Bytes waiting above which the connection is closed (4008): the client is not reading. */
  closeBufferedBytes: number;
  /** How long a stream waits for a slow reader before the connection is closed (4008). */
  slowReaderTimeoutMs: number;
  /** Ping every this often; a connection with no pong by the next ping is closed (4000). */
  pingIntervalMs: number;
}

export const DEFAULT_WS_LIMITS: WsLimits = {
  maxConnections: 512,
  maxInFlightPerConnection: 32,
  maxFrameBytes: 1024 * 1024,
  pauseBufferedBytes: 1024 * 1024,
  closeBufferedBytes: 8 * 1024 * 1024,
  slowReaderTimeoutMs: 30_000,
  pingIntervalMs: 30_000,
};

export interface WsGatewayOptions {
  server: Server;
  service: Service;
  logger: HttpLogger;
  limits?: Partial<WsLimits>;
  /** Told of every finished request (metrics). */
  observe?: RequestObserver;
}

interface Connection {
  ws: WebSocket;
  authorization: string;
  /** Requests in progress by id; aborting one stops its generation. */
  requests: Map<string, AbortController>;
  alive: boolean;
  closed: boolean;
}

export class WsGateway {
  private readonly wss: WebSocketServer;
  private readonly limits: WsLimits;
  private readonly connections = new Set<Connection>();
  private readonly service: Service;
  private readonly logger: HttpLogger;
  private readonly observe: RequestObserver | undefined;
  private draining = false;
  private readonly inFlight = new InFlight();
  private readonly pinger: ReturnType<typeof setInterval>;

  constructor(opts: WsGatewayOptions) {
    this.service = opts.service;
    this.observe = opts.observe;
    this.logger = opts.logger;
    this.limits = { ...DEFAULT_WS_LIMITS, ...opts.limits };
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: this.limits.maxFrameBytes,
      // Answer with svc-v1 when the client offers it (browsers send it beside their key protocol).
      handleProtocols: (protocols) => (protocols.has(WS_SUBPROTOCOL) ? WS_SUBPROTOCOL : false),
    });
    opts.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
    this.pinger = setInterval(() => this.ping(), this.limits.pingIntervalMs);
    this.pinger.unref();
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** New upgrades get 503; requests in progress finish (up to `graceMs`, then they are aborted); then every connection closes with 1001. */
  async shutdown(graceMs = 30_000): Promise<void> {
    this.draining = true;
    clearInterval(this.pinger);
    await this.inFlight.drain(graceMs, this.logger, 'websocket');
    for (const c of this.connections) c.ws.close(WS_CLOSE.goingAway, 'server shutting down');
    await Promise.race([Promise.all([...this.connections].map((c) => closed(c.ws))), sleep(2000)]);
    for (const c of this.connections) c.ws.terminate();
    this.wss.close();
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== WS_PATH) return refuseUpgrade(socket, 404, { error: { message: `No WebSocket endpoint at ${path}; connect to ${WS_PATH}.`, type: 'invalid_request_error', param: null, code: 'unknown_url' } });
    if (this.draining) return refuseUpgrade(socket, 503, shuttingDown().toBody(), errorHeaders(shuttingDown()));
    if (this.connections.size >= this.limits.maxConnections) {
      const err = new ApiError(503, 'server_error', `The server has its maximum of ${this.limits.maxConnections} WebSocket connections open; retry shortly.`, { code: 'too_many_connections', retryAfterSeconds: 1 });
      return refuseUpgrade(socket, 503, err.toBody(), errorHeaders(err));
    }
    const authorization = authorizationOf(req);
    // The key is looked up in the store, which may be a database shared by replicas.
    this.service.checkKey(authorization, this.logger).then(
      (refusal) => {
        if (socket.destroyed) return;
        if (refusal) return refuseUpgrade(socket, refusal.status, refusal.body, errorHeaders(refusal.error));
        this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, authorization!));
      },
      (e: unknown) => {
        this.logger.error({ err: e }, 'websocket upgrade failed');
        socket.destroy();
      },
    );
  }

  private open(ws: WebSocket, authorization: string): void {
    const conn: Connection = { ws, authorization, requests: new Map(), alive: true, closed: false };
    this.connections.add(conn);
    ws.on('pong', () => (conn.alive = true));
    ws.on('message', (data, isBinary) => this.message(conn, data, isBinary));
    ws.on('error', (e) => this.logger.debug({ err: e }, 'websocket error'));
    ws.on('close', () => {
      conn.closed = true;
      this.connections.delete(conn);
      // The client went away: its generations stop, as an HTTP client's do when it disconnects.
      for (const r of conn.requests.values()) r.abort(new Error('client disconnected'));
    });
  }

  private ping(): void {
    for (const c of this.connections) {
      if (!c.alive) {
        c.ws.close(WS_CLOSE.keepaliveTimeout, 'no pong');
        setTimeout(() => c.ws.terminate(), 5000).unref();
        continue;
      }
      c.alive = false;
      c.ws.ping();
    }
  }

  private message(conn: Connection, data: RawData, isBinary: boolean): void {
    if (isBinary) {
      conn.ws.close(WS_CLOSE.unsupportedData, 'frames are JSON text');
      return;
    }
    const text = data.toString();
    // Depth before parsing: JSON.parse recurses per level.
    const deep = findDepthExcess(text);
    let raw: unknown;
    try {
      if (deep) throw new Error('too deep');
      raw = JSON.parse(text);
    } catch {
      const err = deep
        ? invalidRequest(`The message nests deeper than the ${deep.limit} levels of arrays and objects this API accepts.`, null, 'json_too_deep')
        : invalidRequest('The message is not valid JSON. Messages are JSON text frames: {"id", "type": "request", "method", "path", "body"}.', null, 'invalid_json');
      return this.send(conn, errorFrame(null, err));
    }
    const parsed = clientMessageSchema.safeParse(raw);
    if (!parsed.success) {
      const id = typeof (raw as { id?: unknown })?.id === 'string' ? ((raw as { id: string }).id.slice(0, 128)) : null;
      const issue = parsed.error.issues[0];
      const where = issue.path.length ? ` at ${issue.path.join('.')}` : '';
      return this.send(conn, errorFrame(id, invalidRequest(`Invalid message${where}: ${issue.message}. Send {"id", "type": "request", "method", "path", "body"} or {"id", "type": "cancel"}.`, null, 'invalid_message')));
    }
    const msg = parsed.data;
    if (msg.type === 'cancel') {
      // The generation stops and frees its pages; the request then ends with an error frame saying so.
      conn.requests.get(msg.id)?.abort(cancelled());
      return;
    }
    if (conn.requests.has(msg.id)) return this.send(conn, errorFrame(msg.id, invalidRequest(`A request with id "${msg.id}" is already in progress on this connection.`, 'id', 'duplicate_id')));
    if (conn.requests.size >= this.limits.maxInFlightPerConnection) {
      const err = new ApiError(429, 'rate_limit_error', `At most ${this.limits.maxInFlightPerConnection} requests may be in progress on one connection; wait for one to finish or open another connection.`, { code: 'too_many_requests_on_connection', retryAfterSeconds: 1 });
      return this.send(conn, errorFrame(msg.id, err));
    }
    void this.request(conn, msg.id, msg.method, msg.path, msg.body);
  }

  private async request(conn: Connection, id: string, method: string, fullPath: string, body: unknown): Promise<void> {
    const started = performance.now();
    const [path, search = ''] = fullPath.split(/\?(.*)/s);
    const route = matchRoute(method, path);
    if (route.kind !== 'found') {
      return this.send(conn, errorFrame(id, routeError(route, method, path)));
    }
    const tracked = this.inFlight.begin();
    const controller = tracked.controller;
    conn.requests.set(id, controller);
    const record: RequestRecord = {};
    const log = this.logger.child({ reqId: `ws_${randomBase62(16)}` });
    const ctx: RequestContext = {
      requestId: id,
      authorization: conn.authorization,
      readBody: async () => {
        const text = JSON.stringify(body ?? null) ?? 'null';
        return parseJsonBody(text, Buffer.byteLength(text), this.limits.maxFrameBytes);
      },
      params: route.params,
      query: parseQuery(search),
      signal: controller.signal,
      logger: log,
      record,
    };
    let status = 0;
    const wasCancelled = () => controller.signal.aborted && controller.signal.reason instanceof ApiError && controller.signal.reason.code === 'cancelled';
    try {
      const outcome = await this.service.handle(route.op, ctx);
      status = outcome.kind === 'json' ? outcome.status : 200;
      if (wasCancelled()) {
        status = 499;
        this.send(conn, errorFrame(id, cancelled()));
      } else if (outcome.kind === 'json') this.send(conn, jsonFrame(id, outcome));
      else status = await this.stream(conn, id, outcome, ctx, wasCancelled);
    } catch (e) {
      const f = this.service.failure(e, ctx);
      status = f.status;
      this.send(conn, errorFrame(id, f.error));
    } finally {
      conn.requests.delete(id);
      log.info({ transport: 'ws', method, path, status, ms: Math.round(performance.now() - started), ...record }, 'request');
      this.observe?.({ transport: 'ws', endpoint: route.op, status, startedAt: started, record });
      tracked.done();
    }
  }

  /** As over SSE (kit/lifecycle.ts): the first event decides between an error and a stream; returns the status for the log. */
  private async stream(conn: Connection, id: string, outcome: Outcome & { kind: 'stream' }, ctx: RequestContext, wasCancelled: () => boolean): Promise<number> {
    let status = 200;
    const failed = (f: Failure) => {
      status = f.status;
      this.send(conn, wasCancelled() ? errorFrame(id, cancelled()) : { ...errorFrame(id, f.error), headers: stringHeaders({ ...rateLimitHeaders(outcome.rateLimit), ...errorHeaders(f.error) }) });
      if (wasCancelled()) status = 499;
    };
    const ended = await pumpStream(this.service, outcome, ctx, {
      refuse: failed,
      open: () => {},
      send: async (event) => {
        if (wasCancelled() || !(await this.writable(conn))) return false;
        this.send(conn, { id, type: 'chunk', data: event });
        return true;
      },
      end: () => {
        if (!wasCancelled()) return this.send(conn, { id, type: 'done' });
        status = 499;
        this.send(conn, errorFrame(id, cancelled()));
      },
      fail: failed,
    });
    if (ended === 'stopped') {
      if (wasCancelled()) this.send(conn, errorFrame(id, cancelled()));
      return 499;
    }
    return status;
  }

  /** Waits while the client's backlog is over the pause mark; false (and the connection closed) if it stays so. */
  private async writable(conn: Connection): Promise<boolean> {
    const { ws } = conn;
    if (conn.closed) return false;
    if (ws.bufferedAmount <= this.limits.pauseBufferedBytes) return true;
    const deadline = performance.now() + this.limits.slowReaderTimeoutMs;
    while (ws.bufferedAmount > this.limits.pauseBufferedBytes) {
      if (conn.closed) return false;
      if (performance.now() > deadline) {
        this.closeSlow(conn);
        return false;
      }
      await sleep(10);
    }
    return true;
  }

  private send(conn: Connection, msg: ServerMessage): void {
    if (conn.closed || conn.ws.readyState !== conn.ws.OPEN) return;
    conn.ws.send(JSON.stringify(msg));
    if (conn.ws.bufferedAmount > this.limits.closeBufferedBytes) this.closeSlow(conn);
  }

  private closeSlow(conn: Connection): void {
    if (conn.closed) return;
    this.logger.warn({ buffered: conn.ws.bufferedAmount }, 'websocket client reads too slowly; closing');
    conn.closed = true;
    for (const r of conn.requests.values()) r.abort(new Error('client reads too slowly'));
    conn.ws.close(WS_CLOSE.slowReader, 'reading too slowly');
    // A client that does not read will not read the close frame either.
    setTimeout(() => conn.ws.terminate(), 2000).unref();
  }
}

/** What a `cancel` aborts a request with, and the error frame that ends it (499: the client closed the request). */
function cancelled(): ApiError {
  return new ApiError(499, 'invalid_request_error', 'The request was cancelled by the client.', { code: 'cancelled' });
}

function authorizationOf(req: IncomingMessage): string | undefined {
  if (req.headers.authorization) return req.headers.authorization;
  const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
  const key = offered.find((p) => p.startsWith(WS_KEY_PROTOCOL_PREFIX));
  return key ? `Bearer ${key.slice(WS_KEY_PROTOCOL_PREFIX.length)}` : undefined;
}

function jsonFrame(id: string, outcome: Outcome & { kind: 'json' }): ServerMessage {
  const headers = stringHeaders({ ...rateLimitHeaders(outcome.rateLimit), ...(outcome.error ? errorHeaders(outcome.error) : {}) });
  return outcome.status >= 400 ? { id, type: 'error', status: outcome.status, headers, body: outcome.body } : { id, type: 'response', status: outcome.status, headers, body: outcome.body };
}

function errorFrame(id: string | null, err: ApiError): ServerMessage & { type: 'error' } {
  return { id, type: 'error', status: err.status, headers: stringHeaders(errorHeaders(err)), body: err.toBody() };
}

function stringHeaders(h: Headers): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)]));
}

/** An HTTP answer instead of the upgrade, with the provider's JSON error body. */
function refuseUpgrade(socket: Duplex, status: number, body: unknown, headers: Headers = {}): void {
  const text = JSON.stringify(body);
  const reason = { 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 429: 'Too Many Requests', 503: 'Service Unavailable' }[status] ?? 'Error';
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${String(v)}\r\n`).join('');
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${extra}connection: close\r\n\r\n${text}`);
}

function closed(ws: WebSocket): Promise<void> {
  return ws.readyState === ws.CLOSED ? Promise.resolve() : new Promise((resolve) => ws.once('close', () => resolve()));
}

