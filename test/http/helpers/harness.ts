/**
 * An in-process server on a free port with a fresh data folder and a manual clock. The engine is the
 * real test engine, loaded only when a request reaches the model, so tests that never get that far
 * run without it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createApp, type App } from '../../../adapters/app.ts';
import type { ConnectionLimits } from '../../../adapters/http/connection-limits.ts';
import type { WsLimits } from '../../../adapters/ws/server.ts';
import type { StaticAssets } from '../../../adapters/http/static-assets.ts';
import { AccountAdmin } from '../../../adapters/sqlite/accounts.ts';
import type { AdmissionLimits } from '../../../protocol/admission.ts';
import type { TextEngine } from '../../../engine/types.ts';
import { ManualClock } from '../../../protocol/clock.ts';
import type { KeyMode } from '../../../protocol/keys.ts';
import { loadPlans } from '../../../adapters/config-node.ts';
import type { FineTuningOptions } from '../../../protocol/service.ts';

export const DAY_MS = 86_400_000;

export interface Harness {
  url: string;
  /** For the openai client: `${url}/v1`. */
  baseURL: string;
  app: App;
  admin: AccountAdmin;
  clock: ManualClock;
  dataDir: string;
  /** Every log line the server wrote. */
  logs: string[];
  /** A new account's key; `paid` keeps it working past the trial. */
  key(plan?: string, opts?: { mode?: KeyMode; paid?: boolean; rpm?: number; monthly?: number }): string;
  close(): Promise<void>;
}

export function realTestEngine(): Promise<TextEngine> {
  return import('../../helpers/engine.ts').then((m) => m.testEngine());
}

export interface ServerOptions {
  engine?: TextEngine | (() => Promise<TextEngine>);
  clock?: ManualClock;
  maxBodyBytes?: number;
  /** A data folder that outlives the server (a restart); by default a fresh one, removed on close. */
  dataDir?: string;
  plansPath?: string;
  specialistsDir?: string;
  admission?: AdmissionLimits;
  connections?: Partial<ConnectionLimits>;
  ws?: Partial<WsLimits>;
  ui?: StaticAssets;
  fineTuning?: FineTuningOptions;
  maxUploadBytes?: number;
}

export async function startServer(opts: ServerOptions = {}): Promise<Harness> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-http-'));
  const clock = opts.clock ?? new ManualClock();
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  const app = createApp({ dataDir, engine: opts.engine ?? realTestEngine, logger, clock, maxBodyBytes: opts.maxBodyBytes, plansPath: opts.plansPath, specialistsDir: opts.specialistsDir, admission: opts.admission, connections: opts.connections, ws: opts.ws, ui: opts.ui, fineTuning: opts.fineTuning, maxUploadBytes: opts.maxUploadBytes });
  const { url } = await app.http.listen(0, '127.0.0.1');
  const admin = app.opened.sqlite!.accounts;
  return {
    url,
    baseURL: `${url}/v1`,
    app,
    admin,
    clock,
    dataDir,
    logs,
    key(plan = 'solo', k = {}) {
      const created = admin.createAccount({ plan, mode: k.mode ?? 'live', rpmLimit: k.rpm, monthlyLimit: k.monthly, now: clock.now() });
      if (k.paid) admin.setPlan(created.account.id, { plan, paid: true }, clock.now());
      return created.secret;
    },
    async close() {
      await app.close(1000);
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** A chat request that passes validation, for tests about everything around it. */
export function chatBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'svc-chat', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, ...extra };
}
