/**
 * The WebSocket message protocol (docs/api.md, "WebSocket"): JSON text frames, each naming the request it
 * belongs to. Client → server: `request` and `cancel`. Server → client: `response`, `chunk`, `done`, `error`.
 */
import { z } from 'zod';

/** The subprotocol the server answers with; a browser sends its key as `svc-api-key.<key>` beside it. */
export const WS_SUBPROTOCOL = 'svc-v1';
export const WS_KEY_PROTOCOL_PREFIX = 'svc-api-key.';
export const WS_PATH = '/v1/ws';

/** Close codes the server uses (1000–1015 are the standard ones). */
export const WS_CLOSE = {
  /** The server is shutting down. */
  goingAway: 1001,
  /** A frame that is not a JSON text frame. */
  unsupportedData: 1003,
  /** A frame larger than the maximum (the ws library closes with it). */
  tooBig: 1009,
  /** No pong to a ping in time. */
  keepaliveTimeout: 4000,
  /** The client read too slowly: more than the per-connection buffered-bytes limit was waiting to be sent. */
  slowReader: 4008,
  /** More requests in flight on this connection than the limit, or messages that keep being invalid. */
  policy: 1008,
} as const;

const id = z.string().min(1).max(128);

export const clientMessageSchema = z.discriminatedUnion('type', [
  z.strictObject({
    id,
    type: z.literal('request'),
    method: z.enum(['GET', 'POST', 'DELETE']),
    path: z.string().min(1).max(512),
    body: z.record(z.string(), z.unknown()).optional(),
  }),
  z.strictObject({ id, type: z.literal('cancel') }),
]);

export type ClientMessage = z.infer<typeof clientMessageSchema>;

export type ServerMessage =
  | { id: string; type: 'response'; status: number; headers: Record<string, string>; body: unknown }
  | { id: string; type: 'chunk'; data: unknown }
  | { id: string; type: 'done' }
  | { id: string | null; type: 'error'; status: number; headers: Record<string, string>; body: unknown };
