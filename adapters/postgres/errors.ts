/**
 * Which PostgreSQL failures mean "the database cannot be reached right now" (refused, reset, terminated,
 * timed out, shutting down, out of connections): those become 503 backend_unavailable with Retry-After,
 * so clients retry and never see a 500 for an outage. Anything else (a constraint, a bug) stays itself.
 */
import { backendUnavailable, type ApiError } from '../../protocol/errors.ts';

export const DATABASE = 'database (PostgreSQL)';
export const RETRY_AFTER_SECONDS = 2;

export function databaseUnavailable(): ApiError {
  return backendUnavailable(DATABASE, RETRY_AFTER_SECONDS);
}

/** Socket errors on the way to the server. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN', 'ENOTFOUND', 'EAI_AGAIN', 'ENOENT']);

/**
 * SQLSTATEs of an unavailable server: class 08 (connection exception) and these: 57P01 admin_shutdown,
 * 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, shutting down, recovering), 57014
 * query_canceled (our statement_timeout), 53300 too_many_connections, 55P03 lock_not_available.
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '57014', '53300', '55P03']);

/** pg's own errors for a lost or slow connection, which carry no code. */
const CLIENT_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
];

export function isUnreachable(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08'))) return true;
  if (CLIENT_MESSAGES.some((m) => e.message.startsWith(m))) return true;
  // Node reports a host with several addresses, all refused, as one AggregateError.
  if (e instanceof AggregateError) return e.errors.length > 0 && e.errors.every(isUnreachable);
  return false;
}
