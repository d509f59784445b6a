/**
 * A small client for the WebSocket protocol, for Node (pass the `ws` package's WebSocket) and browsers
 * (the global WebSocket). The key travels as the subprotocol `svc-api-key.<key>` beside `svc-v1`, the
 * one way a browser can send it; never in the URL.
 *
 *   const conn = await connectWs('ws://host:port/v1/ws', key);
 *   const models = await conn.request('GET', '/v1/models');
 *   for await (const chunk of conn.stream('/v1/chat/completions', { ...req, stream: true })) ...
 *   conn.close();
 */
import { WS_KEY_PROTOCOL_PREFIX, WS_SUBPROTOCOL, type ServerMessage } from './messages.ts';

/** The part of the WebSocket interface used here (the browser's and the `ws` package's both have it). */
interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'close' | 'error' | 'message', listener: (event: { data?: unknown; code?: number; reason?: string }) => void): void;
}
type SocketConstructor = new (url: string, protocols: string[]) => SocketLike;

/** A refusal, with the status, headers and error body HTTP would have sent. */
export class WsRequestError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    readonly body: { error?: { message?: string; type?: string; code?: string | null; param?: string | null } },
  ) {
    super(`${status} ${body.error?.message ?? 'error'}`);
    this.name = 'WsRequestError';
  }
}

export interface WsConnection {
  /** A request that is answered once (any endpoint, or a chat completion without `stream`). */
  request(method: 'GET' | 'POST' | 'DELETE', path: string, body?: object): Promise<unknown>;
  /** A streaming request: the chunk objects an SSE `data:` line would carry. Leaving the loop early cancels it. */
  stream(path: string, body: object, opts?: { signal?: AbortSignal }): AsyncIterable<unknown>;
  close(): void;
  /** Resolves with the close code when the connection closes. */
  readonly closed: Promise<number>;
}

interface Pending {
  onMessage(msg: ServerMessage): void;
  onClose(code: number): void;
}

export function connectWs(url: string, apiKey: string, WebSocketImpl: SocketConstructor = (globalThis as unknown as { WebSocket: SocketConstructor }).WebSocket): Promise<WsConnection> {
  const socket = new WebSocketImpl(url, [WS_SUBPROTOCOL, `${WS_KEY_PROTOCOL_PREFIX}${apiKey}`]);
  const pending = new Map<string, Pending>();
  let next = 0;
  let closeCode: (code: number) => void = () => {};
  const closed = new Promise<number>((resolve) => (closeCode = resolve));
  socket.addEventListener('message', (e) => {
    const msg = JSON.parse(String(e.data)) as ServerMessage;
    if (msg.id !== null) pending.get(msg.id)?.onMessage(msg);
  });
  socket.addEventListener('close', (e) => {
    for (const p of pending.values()) p.onClose(e.code ?? 1006);
    pending.clear();
    closeCode(e.code ?? 1006);
  });
  const newId = () => `r${++next}`;
  const errorOf = (msg: ServerMessage & { type: 'error' }) => new WsRequestError(msg.status, msg.headers, msg.body as WsRequestError['body']);
  const closedError = (code: number) => new WsRequestError(0, {}, { error: { message: `the connection closed (code ${code})`, type: 'connection_closed', code: String(code) } });

  const conn: WsConnection = {
    closed,
    request(method, path, body) {
      const id = newId();
      return new Promise((resolve, reject) => {
        pending.set(id, {
          onMessage(msg) {
            pending.delete(id);
            if (msg.type === 'error') reject(errorOf(msg));
            else if (msg.type === 'response') resolve(msg.body);
            else reject(new Error(`unexpected ${msg.type} frame for a request that was not a stream`));
          },
          onClose: (code) => reject(closedError(code)),
        });
        socket.send(JSON.stringify({ id, type: 'request', method, path, ...(body ? { body } : {}) }));
      });
    },
    async *stream(path, body, opts = {}) {
      const id = newId();
      const queue: ServerMessage[] = [];
      let wake: (() => void) | undefined;
      let closedWith: number | undefined;
      pending.set(id, {
        onMessage(msg) {
          queue.push(msg);
          wake?.();
        },
        onClose(code) {
          closedWith = code;
          wake?.();
        },
      });
      const cancel = () => socket.readyState === 1 && socket.send(JSON.stringify({ id, type: 'cancel' }));
      opts.signal?.addEventListener('abort', cancel, { once: true });
      socket.send(JSON.stringify({ id, type: 'request', method: 'POST', path, body }));
      let finished = false;
      try {
        for (;;) {
          while (queue.length === 0) {
            if (closedWith !== undefined) throw closedError(closedWith);
            await new Promise<void>((r) => (wake = r));
          }
          const msg = queue.shift()!;
          if (msg.type === 'chunk') yield msg.data;
          else if (msg.type === 'done') {
            finished = true;
            return;
          } else if (msg.type === 'error') {
            finished = true;
            throw errorOf(msg);
          } else {
            // A non-streaming answer (the request had no `stream: true`): its body is the one item.
            finished = true;
            yield (msg as { body: unknown }).body;
            return;
          }
        }
      } finally {
        opts.signal?.removeEventListener('abort', cancel);
        if (!finished) cancel();
        pending.delete(id);
      }
    },
    close: () => socket.close(1000),
  };

  return new Promise((resolve, reject) => {
    socket.addEventListener('open', () => resolve(conn));
    socket.addEventListener('error', () => reject(new Error(`cannot open a WebSocket to ${url} (a refused key answers the upgrade with HTTP 401)`)));
  });
}
