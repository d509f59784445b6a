/**
 * The one error type every layer throws for a caller-visible failure. It carries what the provider's error
 * object needs (`{"error": {"message", "type", "param", "code"}}`) plus the status and the retry hints a
 * transport turns into headers; nothing here knows how those hints travel.
 */
import { EngineInputError } from '../engine/types.ts';

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'rate_limit_error'
  | 'insufficient_quota'
  | 'server_error';

export interface ErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: string | null };
}

export interface ApiErrorInit {
  code?: string | null;
  param?: string | null;
  /** Seconds the caller should wait before retrying (429, 503). */
  retryAfterSeconds?: number;
  /** False where retrying cannot help soon (an exhausted monthly allowance); clients that auto-retry obey it. */
  retryable?: boolean;
}

export class ApiError extends Error {
  readonly code: string | null;
  readonly param: string | null;
  readonly retryAfterSeconds: number | undefined;
  readonly retryable: boolean | undefined;

  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    init: ApiErrorInit = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = init.code ?? null;
    this.param = init.param ?? null;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.retryable = init.retryable;
  }

  toBody(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export function invalidRequest(message: string, param: string | null = null, code: string | null = null): ApiError {
  return new ApiError(400, 'invalid_request_error', message, { param, code });
}

/** `param` is what named it: `model` on chat completions, `specialist` on /v1/infer (the message says which). */
export function modelNotFound(name: string, param = 'model'): ApiError {
  const what = param === 'specialist' ? 'specialist' : 'model';
  return new ApiError(404, 'invalid_request_error', `The ${what} \`${name}\` does not exist or you do not have access to it.`, {
    param,
    code: 'model_not_found',
  });
}

export function invalidApiKey(message: string): ApiError {
  return new ApiError(401, 'authentication_error', message, { code: 'invalid_api_key' });
}

export function permissionDenied(message: string, code: string, param: string | null = null): ApiError {
  return new ApiError(403, 'permission_error', message, { code, param });
}

export function serverError(): ApiError {
  return new ApiError(500, 'server_error', 'The server had an error while processing your request. Retry with backoff; the request id identifies it in our logs.', {
    code: 'server_error',
  });
}

/**
 * A backend the request needs (the shared limiter, the database) cannot be reached: 503 with Retry-After,
 * so clients retry; never a 500, and never a request let through without its checks.
 */
export function backendUnavailable(what: string, retryAfterSeconds = 2): ApiError {
  return new ApiError(503, 'server_error', `The service cannot reach its ${what} right now; retry in ${retryAfterSeconds}s.`, { code: 'backend_unavailable', retryAfterSeconds });
}

export function shuttingDown(): ApiError {
  return new ApiError(503, 'server_error', 'The server is shutting down and takes no new requests; retry shortly.', {
    code: 'service_unavailable',
    retryAfterSeconds: 1,
  });
}

/** The request's headers or body came too slowly (or never); the transport closes the connection. */
export function requestTimeout(): ApiError {
  return new ApiError(408, 'invalid_request_error', 'The request did not arrive in time: its headers, or its body, came too slowly (or not at all), so the connection is closed.', {
    code: 'request_timeout',
  });
}

/** The engine's queue is full: a fault of capacity, not of the caller; retrying shortly may succeed. */
export function overloaded(maxQueued: number): ApiError {
  return new ApiError(503, 'server_error', `The server is overloaded: all generation places are busy and ${maxQueued} requests are already waiting. Retry after the Retry-After interval.`, {
    code: 'overloaded',
    retryAfterSeconds: 2,
  });
}

/** Too many new grammars are waiting for the grammar sandbox (engine/grammar/isolated). */
export function grammarCompilerBusy(detail: string, retryAfterSeconds: number): ApiError {
  return new ApiError(503, 'server_error', `The server is overloaded: ${detail}. Retry after the Retry-After interval.`, {
    code: 'overloaded',
    retryAfterSeconds,
  });
}

/** The caller's own key already has its plan's number of requests running or waiting. */
export function concurrencyLimitExceeded(limit: number, planName: string): ApiError {
  return new ApiError(
    429,
    'rate_limit_error',
    `Concurrency limit reached: this key already has ${limit} request${limit === 1 ? '' : 's'} running or waiting (the ${planName} plan's limit). Wait for one to finish, then retry.`,
    { code: 'concurrency_limit_exceeded', retryAfterSeconds: 1 },
  );
}

/**
 * A generation the server stopped before it finished (the drain deadline at shutdown, say). A transport
 * aborts a request's signal with this as the reason; the protocol then answers with it instead of
 * passing the partial text off as a complete answer.
 */
export function interrupted(why: string): ApiError {
  return new ApiError(503, 'server_error', `The answer was cut off before it was complete (${why}); nothing was counted. Retry the request.`, {
    code: 'generation_interrupted',
    retryAfterSeconds: 1,
  });
}

/** True when an abort came from the server (an interruption to report) rather than from a caller who left. */
export function isInterruption(reason: unknown): reason is ApiError {
  return reason instanceof ApiError && reason.code === 'generation_interrupted';
}

/**
 * Any thrown value as an ApiError: our own pass through, engine input errors become 400 naming the API
 * parameter, everything else is a generic 500 (the caller logs the original).
 */
export function toApiError(e: unknown, paramNames: Readonly<Record<string, string>> = {}): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof EngineInputError) {
    const param = e.param === undefined ? null : (paramNames[e.param] ?? e.param);
    return invalidRequest(e.message, param);
  }
  return serverError();
}
