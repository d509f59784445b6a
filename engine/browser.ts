/** Browser entry point: `navigator.gpu`, models fetched over HTTP (Range requests), nothing from Node. */
import { WebGpuEngine, type EngineOptions } from './engine.ts';
import { selectDevice } from './gpu/select.ts';
import { FetchSource } from './loader/fetch-source.ts';
import type { ModelSource } from './loader/source.ts';
import { browserAdapterCandidates } from './platform/browser-gpu.ts';

export { WebGpuEngine } from './engine.ts';
export type * from './types.ts';

export interface BrowserEngineOptions extends EngineOptions {
  /** URL of a GGUF file (same origin or CORS-enabled), or any ModelSource. */
  model: string | ModelSource;
}

export async function loadBrowserEngine(opts: BrowserEngineOptions): Promise<WebGpuEngine> {
  const selected = await selectDevice(browserAdapterCandidates(), 'browser');
  const source = typeof opts.model === 'string' ? new FetchSource(opts.model) : opts.model;
  try {
    return await WebGpuEngine.load(selected, source, opts);
  } catch (e) {
    selected.device.destroy();
    throw e;
  }
}
