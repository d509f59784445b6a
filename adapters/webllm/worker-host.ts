/**
 * A dedicated worker that WebLLM's client drives, running our engine: WebLLM's own
 * WebWorkerMLCEngineHandler speaks the client's message protocol, with SvcMLCEngine in place of its
 * MLCEngine. The page uses WebLLM unchanged:
 *
 *   const engine = await CreateWebWorkerMLCEngine(new Worker('webllm-worker.js'), 'stories260K', { appConfig, initProgressCallback });
 *
 * The service's configuration is svc-web.json beside this script, or the URL in its `?config=` query.
 */
/// <reference lib="webworker" />
import { WebWorkerMLCEngineHandler } from '@mlc-ai/web-llm';
import { installInHandler, SvcMLCEngine } from './engine.ts';
import { webConfigFromScriptUrl } from './host-config.ts';

declare const self: DedicatedWorkerGlobalScope;

const handler = installInHandler(new WebWorkerMLCEngineHandler(), new SvcMLCEngine({ webConfig: webConfigFromScriptUrl(self.location.href) }));
self.onmessage = (event: MessageEvent) => handler.onmessage(event);
