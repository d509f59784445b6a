/**
 * A service worker that WebLLM's client drives, running our engine: WebLLM's own
 * ServiceWorkerMLCEngineHandler (constructed during the script's first evaluation, as WebLLM requires)
 * with SvcMLCEngine in place of its MLCEngine. The page registers this script and uses WebLLM unchanged:
 *
 *   await navigator.serviceWorker.register('webllm-sw.js');
 *   const engine = await CreateServiceWorkerMLCEngine('stories260K', { appConfig, initProgressCallback });
 *
 * It takes control of open pages at once (skipWaiting, clients.claim), so a first visit needs no reload;
 * WebLLM's client posts to `navigator.serviceWorker.controller`, so a page should wait for it (see
 * docs/webllm.md). The service's configuration is svc-web.json beside this script, or `?config=`.
 */
/// <reference lib="webworker" />
import { ServiceWorkerMLCEngineHandler } from '@mlc-ai/web-llm';
import { installInHandler, SvcMLCEngine } from './engine.ts';
import { webConfigFromScriptUrl } from './host-config.ts';

declare const self: ServiceWorkerGlobalScope;

installInHandler(new ServiceWorkerMLCEngineHandler(), new SvcMLCEngine({ webConfig: webConfigFromScriptUrl(self.location.href) }));

self.addEventListener('install', (event) => event.waitUntil(self.skipWaiting()));
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
