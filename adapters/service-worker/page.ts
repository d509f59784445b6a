/**
 * Page side of the in-browser service: registers the service worker that runs the engine and the
 * protocol on this origin (or, where service workers have no WebGPU, a dedicated worker running the same
 * code), and hands the page what it needs to call it: the local key, a fetch that reaches it, and the
 * model's load progress.
 *
 *   const local = await startLocalService();
 *   const client = new OpenAI({ baseURL: local.baseURL, apiKey: local.apiKey, fetch: local.fetch, dangerouslyAllowBrowser: true });
 */
import { STATUS_PATH, type LocalMode, type LocalStatus } from './local-routes.ts';
import { IDLE, PROGRESS_CHANNEL, type LoadProgress } from './progress.ts';
import type { PageMessage, WorkerMessage } from './worker-messages.ts';

export type { LoadProgress } from './progress.ts';

export interface LocalService {
  /** The local account's key: the page's origin is the trust boundary in this mode. */
  apiKey: string;
  mode: LocalMode;
  /** The API's base URL (`<site root>v1`, which is `location.origin + '/v1'` for a site at the root). */
  baseURL: string;
  /** A fetch that reaches the local service (window.fetch when the service worker controls the page). */
  fetch: typeof fetch;
  /** Progress of the model load; the callback gets the latest state at once. Returns an unsubscribe. */
  onProgress(cb: (p: LoadProgress) => void): () => void;
  /** Resolves when the model is loaded (rejects with the load's error). */
  ready(): Promise<void>;
}

export interface StartOptions {
  /** URL of the service worker script (default `sw.js` beside the page). */
  scriptUrl?: string;
  /** URL of the dedicated-worker fallback's script (default `worker.js` beside the page). */
  workerUrl?: string;
  /** Skip the service worker and run the fallback (tests, or browsers whose service workers misbehave). */
  prefer?: LocalMode;
}

export async function startLocalService(opts: StartOptions = {}): Promise<LocalService> {
  const here = document.baseURI;
  if (opts.prefer !== 'dedicated-worker' && 'serviceWorker' in navigator) {
    const status = await startServiceWorker(new URL(opts.scriptUrl ?? 'sw.js', here).href);
    if (status.local.webgpu) return status.local.apiKey ? fromServiceWorker(status.scope, status.local) : Promise.reject(new Error(status.local.error ?? 'the service worker did not start'));
  }
  return startDedicatedWorker(new URL(opts.workerUrl ?? 'worker.js', here).href, new URL('./', here).href);
}

async function startServiceWorker(script: string): Promise<{ scope: string; local: LocalStatus }> {
  const reg = await navigator.serviceWorker.register(script, { scope: new URL('./', script).href });
  await navigator.serviceWorker.ready;
  // A first visit is not controlled until the worker claims it (its activate handler does).
  if (!navigator.serviceWorker.controller) {
    await new Promise<void>((resolve) => navigator.serviceWorker.addEventListener('controllerchange', () => resolve(), { once: true }));
  }
  const res = await fetch(new URL(STATUS_PATH.slice(1), reg.scope), { cache: 'no-store' });
  if (!res.ok || !(res.headers.get('content-type') ?? '').includes('application/json')) {
    throw new Error(`the service worker did not answer ${STATUS_PATH} (HTTP ${res.status}); is sw.js served from the site's root?`);
  }
  return { scope: reg.scope, local: (await res.json()) as LocalStatus };
}

function fromServiceWorker(scope: string, status: LocalStatus): LocalService {
  const progress = new Progress(status.progress ?? IDLE);
  const channel = new BroadcastChannel(PROGRESS_CHANNEL);
  channel.onmessage = (e: MessageEvent<LoadProgress>) => progress.set(e.data);
  // The worker may have finished before the channel opened: ask once more.
  void fetch(new URL(STATUS_PATH.slice(1), scope), { cache: 'no-store' })
    .then((r) => r.json() as Promise<LocalStatus>)
    .then((s) => s.progress && progress.set(s.progress, true))
    .catch(() => {});
  return { apiKey: status.apiKey!, mode: 'service-worker', baseURL: new URL('v1', scope).href, fetch: window.fetch.bind(window), onProgress: (cb) => progress.on(cb), ready: () => progress.ready() };
}

async function startDedicatedWorker(script: string, root: string): Promise<LocalService> {
  const url = new URL(script);
  url.searchParams.set('root', root);
  const worker = new Worker(url.href, { type: 'classic', name: 'svc-local' });
  const progress = new Progress(IDLE);
  const pending = new Map<number, { head: (r: Response) => void; fail: (e: Error) => void; body?: ReadableStreamDefaultController<Uint8Array> }>();
  let nextId = 1;
  worker.onmessage = (e: MessageEvent<WorkerMessage>) => {
    const m = e.data;
    if (m.type === 'progress') return progress.set(m.progress);
    const p = pending.get(m.id);
    if (!p) return;
    if (m.type === 'head') {
      const body = new ReadableStream<Uint8Array>({ start: (c) => void (p.body = c), cancel: () => worker.postMessage({ type: 'abort', id: m.id } satisfies PageMessage) });
      p.head(new Response([101, 204, 205, 304].includes(m.status) ? null : body, { status: m.status, headers: m.headers }));
    } else if (m.type === 'chunk') p.body?.enqueue(m.bytes);
    else if (m.type === 'end') {
      p.body?.close();
      pending.delete(m.id);
    } else {
      const err = new TypeError(`the local service failed: ${m.message}`);
      p.body ? p.body.error(err) : p.fail(err);
      pending.delete(m.id);
    }
  };
  worker.onerror = (e) => progress.set({ phase: 'error', loaded: 0, total: 0, message: `the service's worker failed: ${e.message}` });

  const workerFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const id = nextId++;
    const body = ['GET', 'HEAD'].includes(request.method) ? null : await request.arrayBuffer();
    request.signal.throwIfAborted();
    return new Promise<Response>((head, fail) => {
      pending.set(id, { head, fail });
      request.signal.addEventListener('abort', () => {
        worker.postMessage({ type: 'abort', id } satisfies PageMessage);
        const p = pending.get(id);
        const reason = request.signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
        p?.body ? p.body.error(reason) : p?.fail(reason);
        pending.delete(id);
      }, { once: true });
      worker.postMessage({ type: 'fetch', id, url: request.url, method: request.method, headers: [...request.headers], body } satisfies PageMessage, body ? [body] : []);
    });
  };
  const status = (await (await workerFetch(new URL(STATUS_PATH.slice(1), root))).json()) as LocalStatus;
  if (!status.apiKey) throw new Error(status.error ?? 'the local service did not start');
  if (status.progress) progress.set(status.progress, true);
  return { apiKey: status.apiKey, mode: 'dedicated-worker', baseURL: new URL('v1', root).href, fetch: workerFetch as typeof fetch, onProgress: (cb) => progress.on(cb), ready: () => progress.ready() };
}

/**
 * The latest load state and its listeners. Within a load phases only move forward, so a late, older
 * message is dropped; after `ready` or `error` a `download` starts a new load (the browser stopped an
 * idle service worker and a request started it again).
 */
class Progress {
  private readonly listeners = new Set<(p: LoadProgress) => void>();
  private static readonly ORDER = ['idle', 'download', 'upload', 'compile', 'ready', 'error'];

  constructor(private state: LoadProgress) {}

  /** `snapshot`: a state read with /svc/status, which may be older than a pushed one, so it never starts a new load. */
  set(p: LoadProgress, snapshot = false): void {
    const order = Progress.ORDER;
    const reload = !snapshot && p.phase === 'download' && (this.state.phase === 'ready' || this.state.phase === 'error');
    if (!reload && order.indexOf(p.phase) < order.indexOf(this.state.phase)) return;
    this.state = p;
    for (const cb of this.listeners) cb(p);
  }

  on(cb: (p: LoadProgress) => void): () => void {
    this.listeners.add(cb);
    cb(this.state);
    return () => this.listeners.delete(cb);
  }

  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      const off = this.on((p) => {
        if (p.phase === 'ready') resolve();
        else if (p.phase === 'error') reject(new Error(p.message ?? 'the model failed to load'));
        else return;
        queueMicrotask(() => off());
      });
    });
  }
}
