/**
 * The fallback where a service worker has no WebGPU: the same service in a dedicated worker the page
 * starts, answering the page's requests over postMessage (page.ts turns them back into a fetch). The
 * worker's URL query names the site root (`?root=<url>`), where svc-web.json is.
 */
/// <reference lib="webworker" />
import { answerLocal } from './local-routes.ts';
import { consoleLogger, startRuntime } from './runtime.ts';
import type { PageMessage, WorkerMessage } from './worker-messages.ts';

declare const self: DedicatedWorkerGlobalScope;

const post = (m: WorkerMessage, transfer: Transferable[] = []) => self.postMessage(m, transfer);
const root = new URL(self.location.href).searchParams.get('root') ?? new URL('./', self.location.href).href;
const runtime = startRuntime({ mode: 'dedicated-worker', siteRoot: root, onProgress: (progress) => post({ type: 'progress', progress }), logger: consoleLogger });
const aborts = new Map<number, AbortController>();

self.addEventListener('message', (event: MessageEvent<PageMessage>) => {
  const m = event.data;
  if (m.type === 'abort') aborts.get(m.id)?.abort();
  else void serve(m);
});

async function serve(m: Extract<PageMessage, { type: 'fetch' }>): Promise<void> {
  const controller = new AbortController();
  aborts.set(m.id, controller);
  try {
    const request = new Request(m.url, { method: m.method, headers: m.headers, body: m.body, signal: controller.signal });
    const url = new URL(m.url);
    const path = '/' + url.pathname.slice(new URL(root).pathname.length);
    const response = await answerLocal(runtime, request, path);
    post({ type: 'head', id: m.id, status: response.status, headers: [...response.headers] });
    if (response.body) {
      const reader = response.body.getReader();
      controller.signal.addEventListener('abort', () => void reader.cancel(), { once: true });
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        post({ type: 'chunk', id: m.id, bytes: value }, [value.buffer]);
      }
    }
    post({ type: 'end', id: m.id });
  } catch (e) {
    post({ type: 'fail', id: m.id, message: e instanceof Error ? e.message : String(e) });
  } finally {
    aborts.delete(m.id);
  }
}
