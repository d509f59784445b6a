/**
 * Wires a runnable service from a data folder: SQLite store, plans, specialists, the protocol service and
 * its HTTP server. `svc serve` and the HTTP tests build the same thing here.
 */
import type { TextEngine } from '../engine/types.ts';
import type { AdmissionLimits } from '../protocol/admission.ts';
import type { Clock } from '../protocol/clock.ts';
import { Service } from '../protocol/service.ts';
import type { ConnectionLimits } from './http/connection-limits.ts';
import { HttpServer } from './http/server.ts';
import type { HttpLogger } from './http/logger.ts';
import { openDatabase, type Db } from './sqlite/db.ts';
import { SqliteStore } from './sqlite/store.ts';
import { loadPlans, loadSpecialists, packageVersion } from './config-node.ts';

export interface AppOptions {
  dataDir: string;
  engine: TextEngine | (() => Promise<TextEngine>);
  logger: HttpLogger;
  clock?: Clock;
  plansPath?: string;
  specialistsDir?: string;
  maxBodyBytes?: number;
  connections?: Partial<ConnectionLimits>;
  admission?: AdmissionLimits;
}

export interface App {
  http: HttpServer;
  service: Service;
  store: SqliteStore;
  db: Db;
  /** Drains the HTTP server, then closes the database. */
  close(graceMs?: number): Promise<void>;
}

export function createApp(opts: AppOptions): App {
  const plans = loadPlans(opts.plansPath);
  const specialists = loadSpecialists(opts.specialistsDir);
  const db = openDatabase(opts.dataDir);
  try {
    const store = new SqliteStore(db);
    const service = new Service({ engine: opts.engine, store, plans, specialists, clock: opts.clock, logger: opts.logger, admission: opts.admission, version: packageVersion() });
    const http = new HttpServer({ service, logger: opts.logger, maxBodyBytes: opts.maxBodyBytes, connections: opts.connections });
    return {
      http,
      service,
      store,
      db,
      async close(graceMs) {
        await http.shutdown(graceMs);
        db.close();
      },
    };
  } catch (e) {
    db.close();
    throw e;
  }
}
