/**
 * The service worker: answers the API on the site's own origin (paths under its scope: `/v1/…`,
 * `/health`, `/svc/status`) from the engine and protocol running inside it; every other request (the
 * page, its scripts, the model file) goes to the network as usual. Chromium may stop an idle service
 * worker; the next request starts it again and the model loads from Cache Storage.
 */
/// <reference lib="webworker" />
import { answerLocal, isServicePath, type LocalRuntime } from './local-routes.ts';
import { PROGRESS_CHANNEL } from './progress.ts';
import { consoleLogger, startRuntime } from './runtime.ts';

declare const self: ServiceWorkerGlobalScope;

const progress = new BroadcastChannel(PROGRESS_CHANNEL);
let runtime: LocalRuntime | undefined;

function start(): LocalRuntime {
  runtime ??= startRuntime({ mode: 'service-worker', siteRoot: self.registration.scope, onProgress: (p) => progress.postMessage(p), logger: consoleLogger });
  return runtime;
}

self.addEventListener('install', (event) => event.waitUntil(self.skipWaiting()));
// Take the open pages at once, so the first visit needs no reload before the API answers.
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  const scope = new URL(self.registration.scope);
  if (url.origin !== scope.origin || !url.pathname.startsWith(scope.pathname)) return;
  const path = '/' + url.pathname.slice(scope.pathname.length);
  if (!isServicePath(path)) return;
  const rt = start();
  // Keep the worker alive while the model loads, whichever request started it.
  event.waitUntil(rt.started.then(({ local }) => local.engine()).catch(() => {}));
  event.respondWith(answerLocal(rt, event.request, path));
});
