/**
 * HTTP/1.1 over raw sockets (node:net), so a request can carry anything: invalid UTF-8, duplicate or huge
 * headers, a lying Content-Length, a body cut short. One exchange per connection (`Connection: close`
 * unless the caller says otherwise); the answer is read until the server closes or the body is complete.
 */
import { connect, type Socket } from 'node:net';

export interface Target {
  host: string;
  port: number;
}

export interface RawRequest {
  method: string;
  path: string;
  /** Header lines as [name, value] pairs, sent in order, repeats allowed. Host is added when missing. */
  headers?: [string, string][];
  body?: Buffer | string;
  /** Add `Content-Length` for the body (default true). */
  contentLength?: boolean;
  /** HTTP version on the request line (default 1.1). */
  version?: string;
  /** Give up after this many ms (the outcome is then `timeout`). */
  timeoutMs?: number;
}

export interface RawResponse {
  /** The status code, or what happened instead of an answer. */
  status: number | 'closed' | 'reset' | 'timeout' | 'refused' | 'garbled';
  headers: Record<string, string>;
  body: Buffer;
  ms: number;
}

export function targetOf(url: string): Target {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 80) };
}

/** The request's bytes exactly as they go on the wire. */
export function encodeRequest(t: Target, r: RawRequest): Buffer {
  const body = r.body === undefined ? undefined : Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body, 'utf8');
  const headers = [...(r.headers ?? [])];
  const has = (n: string) => headers.some(([k]) => k.toLowerCase() === n);
  if (!has('host')) headers.unshift(['Host', `${t.host}:${t.port}`]);
  if (!has('connection')) headers.push(['Connection', 'close']);
  if (body && r.contentLength !== false && !has('content-length')) headers.push(['Content-Length', String(body.length)]);
  const head = `${r.method} ${r.path} HTTP/${r.version ?? '1.1'}\r\n${headers.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
  return body ? Buffer.concat([Buffer.from(head, 'latin1'), body]) : Buffer.from(head, 'latin1');
}

/** One request, one answer (or what the server did instead). */
export function exchange(t: Target, r: RawRequest): Promise<RawResponse> {
  return sendBytes(t, encodeRequest(t, r), r.timeoutMs ?? 30_000);
}

/** Writes bytes, then reads until the first response is complete, the socket closes, or the time is up. */
export function sendBytes(t: Target, bytes: Buffer | Buffer[], timeoutMs: number): Promise<RawResponse> {
  const started = performance.now();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const sock = connect({ host: t.host, port: t.port });
    sock.setNoDelay(true);
    const finish = (status: RawResponse['status'] | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      const parsed = parseResponse(Buffer.concat(chunks));
      const ms = performance.now() - started;
      if (parsed && (parsed.complete || status === 'closed' || status === 'reset')) resolve({ status: parsed.status, headers: parsed.headers, body: parsed.body, ms });
      else resolve({ status: status ?? 'garbled', headers: {}, body: Buffer.concat(chunks), ms });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    sock.on('connect', () => {
      for (const b of Array.isArray(bytes) ? bytes : [bytes]) sock.write(b);
    });
    sock.on('data', (d: Buffer) => {
      chunks.push(d);
      const parsed = parseResponse(Buffer.concat(chunks));
      if (parsed?.complete) finish(undefined);
    });
    sock.on('end', () => finish('closed'));
    sock.on('close', () => finish('closed'));
    sock.on('error', (e: NodeJS.ErrnoException) => finish(e.code === 'ECONNREFUSED' ? 'refused' : e.code === 'EPIPE' || e.code === 'ECONNRESET' ? 'reset' : 'closed'));
  });
}

export interface ParsedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The whole body is here (by Content-Length or the last chunk). */
  complete: boolean;
}

/** Parses the first response in `buf`, or undefined when its head has not arrived (or is not HTTP). */
export function parseResponse(buf: Buffer): ParsedResponse | undefined {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
  if (!m) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const rest = buf.subarray(end + 4);
  const status = Number(m[1]);
  if (status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0), complete: true };
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const { body, complete } = dechunk(rest);
    return { status, headers, body, complete };
  }
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    return { status, headers, body: rest.subarray(0, n), complete: rest.length >= n };
  }
  return { status, headers, body: rest, complete: false };
}

function dechunk(buf: Buffer): { body: Buffer; complete: boolean } {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return { body: Buffer.concat(parts), complete: false };
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size)) return { body: Buffer.concat(parts), complete: false };
    if (size === 0) return { body: Buffer.concat(parts), complete: true };
    if (buf.length < eol + 2 + size) {
      parts.push(buf.subarray(eol + 2));
      return { body: Buffer.concat(parts), complete: false };
    }
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** Opens a socket and resolves once connected (or rejects). */
export function openSocket(t: Target): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: t.host, port: t.port });
    s.once('connect', () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** The `error.code` of a JSON error body, or null. */
export function errorCode(body: Buffer): string | null {
  try {
    const v = JSON.parse(body.toString('utf8')) as { error?: { code?: unknown } };
    return typeof v?.error?.code === 'string' ? v.error.code : v?.error ? 'null' : null;
  } catch {
    return null;
  }
}
