/**
 * Starting the in-browser service in a worker (the service worker, or the dedicated-worker fallback):
 * read the site's svc-web.json, open the local store, start loading the model, and build the fetch
 * handler. Where the worker has no WebGPU it does not start, and says so (the page then falls back).
 */
import type { Logger } from '../../protocol/logger.ts';
import { createFetchHandler } from './fetch-handler.ts';
import { LocalService } from './local-service.ts';
import type { LocalMode, LocalRuntime } from './local-routes.ts';
import type { LoadProgress } from './progress.ts';
import { parseWebConfig, WEB_CONFIG_FILE } from './web-config.ts';

export function startRuntime(opts: { mode: LocalMode; siteRoot: string; onProgress: (p: LoadProgress) => void; logger: Logger }): LocalRuntime {
  const webgpu = typeof navigator !== 'undefined' && 'gpu' in navigator && Boolean(navigator.gpu);
  const started = (async () => {
    if (!webgpu) throw new Error(`WebGPU is not available in this ${opts.mode === 'service-worker' ? 'service worker' : 'worker'}`);
    const configUrl = new URL(WEB_CONFIG_FILE, opts.siteRoot);
    const res = await fetch(configUrl, { cache: 'no-store' });
    if (!res.ok) throw new Error(`cannot read ${configUrl.href}: HTTP ${res.status}`);
    const config = parseWebConfig(await res.json(), configUrl.href);
    // A relative model URL is relative to the config file, like any link on the site.
    config.model.url = new URL(config.model.url, configUrl).href;
    const local = await LocalService.create({ config, onProgress: throttled(opts.onProgress), logger: opts.logger });
    return { local, handler: createFetchHandler({ service: local.service, logger: opts.logger }) };
  })();
  started.catch(() => {});
  return { mode: opts.mode, webgpu, started };
}

/** Every phase change, and within a phase at most every 100 ms (a tensor-by-tensor upload would flood pages). */
function throttled(cb: (p: LoadProgress) => void): (p: LoadProgress) => void {
  let last: LoadProgress | undefined;
  let at = 0;
  return (p) => {
    const now = performance.now();
    if (last && last.phase === p.phase && p.loaded < p.total && now - at < 100) return;
    last = p;
    at = now;
    cb(p);
  };
}

/** Browser consoles are the log here; debug lines only when asked for. */
export const consoleLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (obj, msg) => console.warn(msg ?? '', obj),
  error: (obj, msg) => console.error(msg ?? '', obj),
};
