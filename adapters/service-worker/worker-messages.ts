/**
 * Messages between a page and the dedicated-worker fallback, which answers the same requests as the
 * service worker over postMessage: the page sends a request (its bytes and an id), the worker answers
 * with the status and headers, then body chunks, then the end; the page may abort; progress is pushed.
 */
import type { LoadProgress } from './progress.ts';

export type PageMessage =
  | { type: 'fetch'; id: number; url: string; method: string; headers: [string, string][]; body: ArrayBuffer | null }
  | { type: 'abort'; id: number };

export type WorkerMessage =
  | { type: 'head'; id: number; status: number; headers: [string, string][] }
  | { type: 'chunk'; id: number; bytes: Uint8Array }
  | { type: 'end'; id: number }
  | { type: 'fail'; id: number; message: string }
  | { type: 'progress'; progress: LoadProgress };
