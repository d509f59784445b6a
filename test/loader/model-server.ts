/** A real HTTP server on 127.0.0.1 that serves one model file, with switchable misbehaviour for download tests. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServerBehaviour {
  bytes: Uint8Array;
  etag: string;
  /** Honour Range requests (else always send the whole file with 200). */
  range: boolean;
  /** Send this many body bytes of the next model response, then cut the connection (once). */
  dropAfter?: number;
  /** Announce this Content-Length on every model response whatever is sent, then cut the connection. */
  claimLength?: number;
  /** Pause between 16 KiB pieces of the body, so tests can act mid-transfer. */
  chunkDelayMs?: number;
}

export interface RequestLog {
  path: string;
  range?: string;
  ifRange?: string;
  status?: number;
}

export interface ModelServer {
  url(path: string): string;
  state: ServerBehaviour;
  /** Requests for the model file (redirects and 404s too). */
  requests: RequestLog[];
  close(): Promise<void>;
}

const PIECE = 16 * 1024;

export async function startModelServer(initial: Omit<ServerBehaviour, 'etag' | 'range'> & Partial<ServerBehaviour>): Promise<ModelServer> {
  const state: ServerBehaviour = { etag: '"v1"', range: true, ...initial };
  const requests: RequestLog[] = [];

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const log: RequestLog = { path: req.url ?? '', range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined };
    requests.push(log);
    const send = (status: number, headers: Record<string, string>, body?: Uint8Array) => {
      log.status = status;
      res.writeHead(status, headers);
      res.end(body);
    };
    if (log.path.startsWith('/redirect/')) return send(302, { location: log.path.slice('/redirect'.length) });
    if (log.path !== '/model.gguf') return send(404, { 'content-type': 'text/plain' }, new TextEncoder().encode('no such model'));

    const b = state.bytes;
    let start = 0;
    let end = b.length - 1;
    let status = 200;
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream', etag: state.etag, 'accept-ranges': state.range ? 'bytes' : 'none' };
    const m = /^bytes=(\d+)-(\d*)$/.exec(log.range ?? '');
    if (state.range && m && (log.ifRange === undefined || log.ifRange === state.etag)) {
      start = Number(m[1]);
      end = m[2] ? Math.min(Number(m[2]), b.length - 1) : b.length - 1;
      if (start >= b.length) return send(416, { 'content-range': `bytes */${b.length}` });
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${state.claimLength ?? b.length}`;
    }
    const body = b.subarray(start, end + 1);
    headers['content-length'] = String(state.claimLength !== undefined ? state.claimLength - start : body.length);
    log.status = status;
    res.writeHead(status, headers);

    let limit = body.length;
    let cut = false;
    if (state.dropAfter !== undefined) {
      limit = Math.min(state.dropAfter, body.length);
      state.dropAfter = undefined;
      cut = true;
    }
    if (state.claimLength !== undefined) cut = true;
    let at = 0;
    const pump = () => {
      if (res.destroyed) return;
      if (at >= limit) {
        // Give the client the bytes before cutting, so "dropped halfway" really delivers half.
        if (cut) res.socket?.end(() => res.socket?.destroy());
        else res.end();
        return;
      }
      const piece = body.subarray(at, Math.min(at + PIECE, limit));
      at += piece.length;
      res.write(piece, () => (state.chunkDelayMs ? setTimeout(pump, state.chunkDelayMs) : pump()));
    };
    pump();
  };

  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    state,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
