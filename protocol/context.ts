/** What handlers get: the service's parts, and one request's transport-free context; what they return. */
import type { TextEngine } from '../engine/types.ts';
import type { AccessControl } from './access.ts';
import type { Admission } from './admission.ts';
import type { Clock } from './clock.ts';
import type { ApiError } from './errors.ts';
import type { FineTuning } from './fine-tuning/service-parts.ts';
import type { Logger } from './logger.ts';
import type { PlanCatalog } from './plans.ts';
import type { RateLimitState } from './rate-limiter.ts';
import type { SpecialistRegistry } from './specialists/registry.ts';
import type { Store } from './store.ts';

export interface ServiceParts {
  access: AccessControl;
  specialists: SpecialistRegistry;
  plans: PlanCatalog;
  store: Store;
  clock: Clock;
  /** Bounds the generations running and waiting, overall and per key. */
  admission: Admission;
  /** Only called once a request is about to reach the model. */
  engine: () => Promise<TextEngine>;
  version: string;
  /** ms since epoch, by `clock`. */
  startedAt: number;
  logger: Logger;
  /** Files, jobs and fine-tuned models, where the store keeps them. */
  fineTuning?: FineTuning;
}

/** Facts about a request for the transport's access log; never keys or prompts. */
export interface RequestRecord {
  key?: string;
  keyMode?: string;
  accountId?: number;
  specialist?: string;
  model?: string;
  stream?: boolean;
  promptTokens?: number;
  completionTokens?: number;
  finishReason?: string;
  /** The error's code when the answer was an error (`rate_limit_exceeded`, `insufficient_quota`, …). */
  errorCode?: string;
  /** When the first generated token was ready (performance.now()), for time-to-first-token. */
  firstTokenAt?: number;
  /** When the last one was (performance.now()), for tokens per second. */
  lastTokenAt?: number;
}

export interface RequestContext {
  requestId: string;
  /** The `Authorization` header, as sent. */
  authorization: string | undefined;
  /** Reads and parses the JSON body; rejects with an ApiError (400, 413) for a bad one. Called only after authentication. */
  readBody(): Promise<unknown>;
  /** Path parameters, e.g. `{ id }` for a model. */
  params: Readonly<Record<string, string>>;
  /** Query-string parameters (the list endpoints' `after` and `limit`); transports without them leave it out. */
  query?: Readonly<Record<string, string>>;
  /**
   * Reads a multipart/form-data body (file uploads), bounded by the transport; rejects with an ApiError
   * (400, 413) for a bad one. Absent where the transport cannot carry uploads (the protocol says so).
   */
  readUpload?(): Promise<Upload>;
  /** Aborted when the caller goes away: generation stops. */
  signal: AbortSignal;
  logger: Logger;
  record: RequestRecord;
}

/** A parsed multipart body: its text fields and its one file. */
export interface Upload {
  fields: Readonly<Record<string, string>>;
  file?: { field: string; filename: string; contentType: string; bytes: Uint8Array };
}

export type Outcome =
  | { kind: 'json'; status: number; body: unknown; rateLimit?: RateLimitState; error?: ApiError }
  /**
   * Events to send one by one. Checks that can still fail run before the first event, so a transport
   * that waits for the first event before committing to a status can still answer an error with its own.
   */
  | { kind: 'stream'; events: AsyncIterable<object>; rateLimit?: RateLimitState };

export function json(body: unknown, status = 200): Outcome {
  return { kind: 'json', status, body };
}
