/**
 * The whole service inside a browser (a service worker, a dedicated worker, or a page): the engine on
 * `navigator.gpu` with its model from Cache Storage, the local account's store on IndexedDB, and the
 * platform-free protocol over them. The model starts loading at once; requests that need it wait, and
 * the load reports its progress (download, upload to the GPU, compile).
 */
import { WebGpuEngine, type EngineOptions } from '../../engine/engine.ts';
import { selectDevice } from '../../engine/gpu/select.ts';
import { cachedModel } from '../../engine/loader/cache-storage-source.ts';
import { browserAdapterCandidates } from '../../engine/platform/browser-gpu.ts';
import { parsePlans } from '../../protocol/plans.ts';
import { Service } from '../../protocol/service.ts';
import { parseSpecialists } from '../../protocol/specialists/registry.ts';
import type { Logger } from '../../protocol/logger.ts';
import { LocalStore } from './local-store.ts';
import { IDLE, type LoadProgress } from './progress.ts';
import type { WebConfig } from './web-config.ts';

export const DEFAULT_DB_NAME = 'svc-local';

export interface LocalServiceOptions {
  config: WebConfig;
  /** IndexedDB database for the account, usage and chat memory; null: memory only. */
  dbName?: string | null;
  onProgress?: (p: LoadProgress) => void;
  logger?: Logger;
  engine?: EngineOptions;
}

export class LocalService {
  private progressState: LoadProgress = IDLE;
  private readonly listeners = new Set<(p: LoadProgress) => void>();
  private readonly loading: Promise<WebGpuEngine>;

  private constructor(
    readonly service: Service,
    readonly store: LocalStore,
    readonly config: WebConfig,
    load: (report: (p: LoadProgress) => void) => Promise<WebGpuEngine>,
  ) {
    this.loading = load((p) => this.report(p));
    this.loading.catch((e: unknown) => this.report({ phase: 'error', loaded: 0, total: 0, message: e instanceof Error ? e.message : String(e) }));
  }

  static async create(opts: LocalServiceOptions): Promise<LocalService> {
    const { config } = opts;
    const plans = parsePlans(config.plans, 'svc-web.json plans');
    const specialists = parseSpecialists(config.specialists.map((f) => ({ name: f.name, path: `svc-web.json specialists/${f.name}`, text: f.text })));
    const store = await LocalStore.open({ ...config.account, plans, now: Date.now(), dbName: opts.dbName === undefined ? DEFAULT_DB_NAME : opts.dbName });
    let engine: Promise<WebGpuEngine> | undefined;
    const local = new LocalService(
      new Service({ engine: () => engine!, store, plans, specialists, version: config.version, logger: opts.logger }),
      store,
      config,
      (report) => (engine = loadEngine(config, { ...config.engine, ...opts.engine }, report)),
    );
    if (opts.onProgress) local.onProgress(opts.onProgress);
    return local;
  }

  get apiKey(): string {
    return this.store.apiKey;
  }

  get progress(): LoadProgress {
    return this.progressState;
  }

  /** The engine once loaded (rejects with the load's error). */
  engine(): Promise<WebGpuEngine> {
    return this.loading;
  }

  /** Calls `cb` with the current state now and with every change after; returns an unsubscribe. */
  onProgress(cb: (p: LoadProgress) => void): () => void {
    this.listeners.add(cb);
    cb(this.progressState);
    return () => this.listeners.delete(cb);
  }

  async close(): Promise<void> {
    const engine = await this.loading.catch(() => undefined);
    await engine?.dispose();
    await this.store.flushed();
    this.store.close();
  }

  private report(p: LoadProgress): void {
    this.progressState = p;
    for (const cb of this.listeners) cb(p);
  }
}

async function loadEngine(config: WebConfig, options: EngineOptions, report: (p: LoadProgress) => void): Promise<WebGpuEngine> {
  report({ phase: 'download', loaded: 0, total: 0 });
  const source = await cachedModel(config.model.url, { onProgress: (d) => report({ phase: 'download', loaded: d.loaded, total: d.total, fromCache: d.fromCache }) });
  const selected = await selectDevice(browserAdapterCandidates(), 'browser');
  let uploaded = false;
  try {
    const engine = await WebGpuEngine.load(selected, source, {
      ...options,
      onProgress: (loaded, total) => {
        if (uploaded) return;
        report({ phase: 'upload', loaded, total });
        // The weights are on the GPU; what is left is building the pipelines and the first step's buffers.
        if (loaded >= total) {
          uploaded = true;
          report({ phase: 'compile', loaded: 0, total: 0 });
        }
      },
    });
    // Pipelines compile on first use: do it now, inside the compile phase, not in the first request.
    await engine.warmUp();
    report({ phase: 'ready', loaded: 0, total: 0, message: engine.info.name });
    return engine;
  } catch (e) {
    selected.device.destroy();
    throw e;
  }
}
