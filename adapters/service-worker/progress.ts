/**
 * The model's load progress as the in-browser service reports it to pages: one type, and the channel
 * the service worker broadcasts it on (every page of the origin hears it; a page that opens later asks
 * `GET /svc/status` for the latest state).
 */

export type LoadPhase = 'idle' | 'download' | 'upload' | 'compile' | 'ready' | 'error';

export interface LoadProgress {
  phase: LoadPhase;
  /** Bytes done in this phase (download: fetched or found in the cache; upload: written to the GPU). */
  loaded: number;
  total: number;
  /** Bytes of the download that came from the cache instead of the network. */
  fromCache?: number;
  /** What failed (phase `error`), or the model's name (phase `ready`). */
  message?: string;
}

export const PROGRESS_CHANNEL = 'svc-load-progress';

export const IDLE: LoadProgress = { phase: 'idle', loaded: 0, total: 0 };
