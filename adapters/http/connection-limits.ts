/**
 * Bounds on connections, set through node:http's own knobs. Chosen for an API whose requests are small
 * JSON bodies and whose answers may take minutes: the request must arrive quickly, the answer may not.
 */
import type { Server, ServerOptions } from 'node:http';

export interface ConnectionLimits {
  /** Open connections at most; beyond it node:http closes a new connection at once. Keep it below `ulimit -n`. */
  maxConnections: number;
  /** Time to receive a request's headers, counted from the connection's start for its first request: 408. */
  headersTimeoutMs: number;
  /** Time to receive the whole request, body included (not the answer): 408. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Requests per connection; the last one is answered with `connection: close`. */
  maxRequestsPerSocket: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 4096,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 1000,
};

/**
 * node:http checks the header and request timeouts only every `connectionsCheckingInterval` (30 s by
 * default), which would let a silent socket live up to twice its timeout; check every second instead.
 */
export function serverOptions(limits: ConnectionLimits): ServerOptions {
  for (const [name, v] of Object.entries(limits)) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`connection limit ${name} must be a positive integer, got ${v}`);
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(`the header timeout (${limits.headersTimeoutMs} ms) must not exceed the request timeout (${limits.requestTimeoutMs} ms)`);
  }
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
}

/** The limits node:http takes as properties rather than constructor options. */
export function applyConnectionLimits(server: Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.maxConnections;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
}
