/**
 * Wires a runnable service from a store (SQLite in a data folder, or one the caller opened), plans, specialists, the protocol service and
 * its HTTP server. `svc serve` and the HTTP tests build the same thing here.
 */
import type { WebGpuEngine } from '../engine/engine.ts';
import type { TextEngine } from '../engine/types.ts';
import type { Limits } from '../protocol/limits.ts';
import { ServiceMetrics } from './metrics/registry.ts';
import { Readiness } from './kit/observer.ts';
import type { AdmissionLimits } from '../protocol/admission.ts';
import type { Clock } from '../protocol/clock.ts';
import { Service, type FineTuningOptions } from '../protocol/service.ts';
import type { ConnectionLimits } from './http/connection-limits.ts';
import { DEFAULT_MAX_BODY_BYTES, HttpServer } from './http/server.ts';
import { WsGateway, type WsLimits } from './ws/server.ts';
import type { StaticAssets } from './http/static-assets.ts';
import type { HttpLogger } from './http/logger.ts';
import { openSqliteStore, type OpenedStore } from './open-store.ts';
import type { Store } from '../protocol/store.ts';
import { loadPlans, loadSpecialists, packageVersion } from './config-node.ts';

export interface AppOptions {
  /** The SQLite data folder, used when `store` is not given. */
  dataDir: string;
  /** A store opened by the caller (PostgreSQL for replicas: adapters/open-store.ts); default SQLite in dataDir. */
  store?: OpenedStore;
  engine: TextEngine | (() => Promise<TextEngine>);
  logger: HttpLogger;
  clock?: Clock;
  plansPath?: string;
  specialistsDir?: string;
  maxBodyBytes?: number;
  connections?: Partial<ConnectionLimits>;
  admission?: AdmissionLimits;
  /** WebSocket limits (adapters/ws/server.ts DEFAULT_WS_LIMITS); the frame limit defaults to maxBodyBytes. */
  ws?: Partial<WsLimits>;
  /** The playground's files, served at `/` (svc serve builds them unless --no-ui). */
  ui?: StaticAssets;
  /** Shared per-minute limits and quota holds (Redis, for replicas); default: in this process's memory. */
  limits?: Limits;
  /** The engine once loaded, for the metrics read at scrape time (queue, sequences, KV pages, prefix cache). */
  loadedEngine?: () => WebGpuEngine | undefined;
  /** Largest file upload on POST /v1/files (default 16 MiB). */
  maxUploadBytes?: number;
  /** The trainer behind fine-tuning jobs and fine-tuned models (protocol/fine-tuning/tuner.ts). */
  fineTuning?: FineTuningOptions;
}

export interface App {
  http: HttpServer;
  metrics: ServiceMetrics;
  /** Tell it when the model has loaded; draining is told by close(). */
  readiness: Readiness;
  ws: WsGateway;
  service: Service;
  store: Store;
  /** The store with its admin (and, on SQLite, the synchronous database handles). */
  opened: OpenedStore;
  /** Drains the HTTP server, then closes the database. */
  close(graceMs?: number): Promise<void>;
}

export function createApp(opts: AppOptions): App {
  const plans = loadPlans(opts.plansPath);
  const specialists = loadSpecialists(opts.specialistsDir);
  const opened = opts.store ?? openSqliteStore(opts.dataDir, plans);
  try {
    const store = opened.store;
    const version = packageVersion();
    const service = new Service({ engine: opts.engine, store, limits: opts.limits, plans, specialists, clock: opts.clock, logger: opts.logger, admission: opts.admission, version, fineTuning: opts.fineTuning });
    const readiness = new Readiness();
    let model: string | undefined;
    const metrics = new ServiceMetrics({
      service,
      engine: () => opts.loadedEngine?.(),
      info: () => {
        const e = opts.loadedEngine?.();
        model ??= e?.info.name;
        return e ? { adapter: e.stats().adapter, model: model ?? '', version } : undefined;
      },
    });
    const observe = (f: Parameters<ServiceMetrics['observe']>[0]) => metrics.observe(f);
    const http = new HttpServer({ service, logger: opts.logger, maxBodyBytes: opts.maxBodyBytes, maxUploadBytes: opts.maxUploadBytes, connections: opts.connections, observe, readiness, ui: opts.ui });
    // WebSocket on the same port, path /v1/ws.
    const ws = new WsGateway({ server: http.server, service, logger: opts.logger, observe, limits: { maxFrameBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, ...opts.ws } });
    return {
      http,
      metrics,
      readiness,
      ws,
      service,
      store,
      opened,
      async close(graceMs) {
        readiness.drain();
        await Promise.all([ws.shutdown(graceMs), http.shutdown(graceMs), service.close()]);
        await opts.limits?.close?.();
        await opened.close();
      },
    };
  } catch (e) {
    void opened.close();
    throw e;
  }
}
