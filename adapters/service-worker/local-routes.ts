/**
 * What the in-browser service answers, the same in the service worker and in the dedicated-worker
 * fallback: the API (`/health`, `/v1/…`, through the fetch handler) and `GET /svc/status`, the page's
 * view of the local service (its key, the model's load progress, whether WebGPU is there). Paths are
 * relative to where the site is mounted (the service worker's scope).
 */
import { ApiError } from '../../protocol/errors.ts';
import { CORS_HEADERS } from '../kit/answer-headers.ts';
import type { FetchHandler } from './fetch-handler.ts';
import type { LocalService } from './local-service.ts';
import type { LoadProgress } from './progress.ts';

export const STATUS_PATH = '/svc/status';

export type LocalMode = 'service-worker' | 'dedicated-worker';

export interface LocalStatus {
  mode: LocalMode;
  /** False where this worker has no `navigator.gpu`: the page should run the dedicated-worker fallback. */
  webgpu: boolean;
  /** Present once the service is up: the local account's key (the origin is the trust boundary). */
  apiKey?: string;
  progress?: LoadProgress;
  model?: { url: string; id?: string };
  version?: string;
  /** Once the model is loaded: what the engine is running (a cancelled request leaves nothing behind). */
  engine?: { adapter: string; activeSequences: number; waitingSequences: number; kvPages: { total: number; free: number } };
  /** Why the service could not start (its config could not be read, no WebGPU). */
  error?: string;
}

/** Whether a path (relative to the mount point) is the service's to answer rather than a file of the site. */
export function isServicePath(path: string): boolean {
  return path === '/health' || path.startsWith('/v1/') || path === STATUS_PATH;
}

export interface LocalRuntime {
  mode: LocalMode;
  webgpu: boolean;
  /** The service and its fetch handler, or why there is none. */
  started: Promise<{ local: LocalService; handler: FetchHandler }>;
}

export async function answerLocal(rt: LocalRuntime, request: Request, path: string): Promise<Response> {
  let up: Awaited<LocalRuntime['started']>;
  try {
    up = await rt.started;
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    if (path === STATUS_PATH) return json(200, { mode: rt.mode, webgpu: rt.webgpu, error: why } satisfies LocalStatus);
    const err = new ApiError(503, 'server_error', `The in-browser service could not start: ${why}`, { code: 'service_unavailable', retryable: false });
    return json(503, err.toBody());
  }
  if (path === STATUS_PATH) {
    const { local } = up;
    const stats = local.progress.phase === 'ready' ? (await local.engine()).stats() : undefined;
    const engine = stats && { adapter: stats.adapter, activeSequences: stats.activeSequences, waitingSequences: stats.waitingSequences, kvPages: stats.kvPages };
    return json(200, { mode: rt.mode, webgpu: rt.webgpu, apiKey: local.apiKey, progress: local.progress, model: local.config.model, version: local.config.version, engine } satisfies LocalStatus);
  }
  return up.handler(request, path);
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...(CORS_HEADERS as Record<string, string>) } });
}
