/**
 * `svc serve`: check the options, open the data folder and bind the port (so mistakes there do not wait
 * for the model), then load the model and serve the API. SIGTERM/SIGINT drain: in-flight requests finish
 * (new ones get 503), then the process exits; a second signal exits at once.
 */
import { type Command } from 'commander';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createApp } from '../../adapters/app.ts';
import { StaticAssets } from '../../adapters/http/static-assets.ts';
import { buildPlayground } from '../../build/playground.ts';
import { startMetricsServer } from '../../adapters/metrics/server.ts';
import { RedisLimits } from '../../adapters/redis/limits.ts';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { engineTuner } from '../../protocol/fine-tuning/engine-tuner.ts';
import { DEFAULT_MAX_BODY_BYTES } from '../../adapters/http/server.ts';
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from '../../adapters/http/connection-limits.ts';
import { DEFAULT_ADMISSION } from '../../protocol/admission.ts';
import { createLogger, type HttpLogger } from '../../adapters/http/logger.ts';
import { resolveDataDir } from '../../adapters/sqlite/db.ts';
import type { TextEngine } from '../../engine/types.ts';
import { checkChoice, choiceOption, intOption, LOG_LEVELS, NODE_ADAPTERS } from '../options.ts';
import { DATA_OPTION_HELP, STORE_OPTION_HELP } from './keys.ts';
import { openStore, resolveStoreSpec, type OpenedStore } from '../../adapters/open-store.ts';
import { loadPlans } from '../../adapters/config-node.ts';

/** The tiny test model next to the repository, used when neither --model nor $SVC_MODEL is given. */
export const DEFAULT_MODEL = fileURLToPath(new URL('../../../shared/models/stories260K.gguf', import.meta.url));

interface ServeOptions {
  model?: string;
  port: number;
  host: string;
  data?: string;
  adapter?: string;
  maxBodyBytes: number;
  drainSeconds: number;
  logLevel: string;
  maxConnections: number;
  maxRunning: number;
  maxQueue: number;
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  ui: boolean;
  redis?: string;
  store?: string;
  firstKeyPlan: string;
  metricsPort?: number;
  metricsHost: string;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve the OpenAI-compatible API on one model')
    .option('--model <path-or-url>', `GGUF file or https URL (default: $SVC_MODEL, else ${DEFAULT_MODEL} when present)`)
    .option('--port <port>', 'TCP port; 0 picks a free one', intOption('--port', 0, 65535), 8080)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--data <dir>', DATA_OPTION_HELP)
    .option('--store <url>', STORE_OPTION_HELP)
    .option('--adapter <choice>', 'WebGPU adapter: auto, gpu, swiftshader, llvmpipe (default: $SVC_ADAPTER or auto)', choiceOption('--adapter', NODE_ADAPTERS))
    .option('--max-body-bytes <n>', 'largest request body accepted', intOption('--max-body-bytes', 1), DEFAULT_MAX_BODY_BYTES)
    .option('--drain-seconds <n>', 'on SIGTERM/SIGINT, how long in-flight requests may take to finish', intOption('--drain-seconds', 0), 30)
    .option('--max-connections <n>', 'open connections at most; more are closed at once (keep below ulimit -n)', intOption('--max-connections', 1), DEFAULT_CONNECTION_LIMITS.maxConnections)
    .option('--max-running <n>', 'generations the engine runs at once', intOption('--max-running', 1, 256), DEFAULT_ADMISSION.maxRunning)
    .option('--max-queue <n>', 'requests that may wait for a running place; more get 503 overloaded', intOption('--max-queue', 0), DEFAULT_ADMISSION.maxQueued)
    .option('--headers-timeout <s>', "seconds a connection may take to send a request's headers (408 after)", intOption('--headers-timeout', 1), DEFAULT_CONNECTION_LIMITS.headersTimeoutMs / 1000)
    .option('--request-timeout <s>', 'seconds a request may take to arrive whole, body included (408 after)', intOption('--request-timeout', 1), DEFAULT_CONNECTION_LIMITS.requestTimeoutMs / 1000)
    .option('--keep-alive-timeout <s>', 'seconds an idle kept-alive connection stays open', intOption('--keep-alive-timeout', 1), DEFAULT_CONNECTION_LIMITS.keepAliveTimeoutMs / 1000)
    .option('--no-ui', 'do not serve the playground page at /')
    .option('--first-key-plan <plan>', 'on a first start with no keys (SQLite), the plan of the key made and printed once', 'professional')
    .option('--redis <url>', 'share the per-minute limits and quota holds with other replicas on this Redis (default: $SVC_REDIS_URL, else in memory)')
    .option('--metrics-port <port>', 'serve GET /metrics (Prometheus) and GET /ready on this port (default: off)', intOption('--metrics-port', 0, 65535))
    .option('--metrics-host <host>', 'address for --metrics-port (keep it private)', '127.0.0.1')
    .option('--log-level <level>', `one of ${LOG_LEVELS.join(', ')} (default: $SVC_LOG_LEVEL or info)`, process.env.SVC_LOG_LEVEL ?? 'info')
    .action((opts: ServeOptions) => serve(opts));
}

async function serve(opts: ServeOptions): Promise<void> {
  const model = resolveModel(opts.model);
  // Commander checks only values given on the command line; the environment's defaults are checked here.
  const logger = createLogger(checkChoice(opts.logLevel === process.env.SVC_LOG_LEVEL ? '$SVC_LOG_LEVEL' : '--log-level', opts.logLevel, LOG_LEVELS));
  const adapter = opts.adapter ?? checkChoice('$SVC_ADAPTER', process.env.SVC_ADAPTER?.trim() || 'auto', NODE_ADAPTERS);
  const spec = resolveStoreSpec({ data: opts.data, store: opts.store });
  const dataDir = spec.dataDir ?? resolveDataDir();
  // PostgreSQL is reached (and migrated) before anything else: a wrong URL fails at once.
  const opened = spec.url ? await openStore(spec, loadPlans(), { logger }) : undefined;

  let engine: WebGpuEngine | undefined;
  // Requests that arrive while the model loads wait for it (the port is bound first, so a busy one is reported at once).
  let loaded!: (e: TextEngine) => void;
  let failed!: (e: unknown) => void;
  const loading = new Promise<TextEngine>((resolve, reject) => ((loaded = resolve), (failed = reject)));
  loading.catch(() => {});
  // Data folder and config first: a mistake there should not wait for the model to load.
  // The playground is bundled once, in memory, before the port opens.
  const ui = opts.ui ? new StaticAssets((await buildPlayground({ mode: 'server' })).files) : undefined;
  const redisUrl = opts.redis ?? (process.env.SVC_REDIS_URL?.trim() || undefined);
  const limits = redisUrl ? new RedisLimits({ url: redisUrl, logger }) : undefined;
  const app = createApp({
    dataDir,
    store: opened,
    logger,
    maxBodyBytes: opts.maxBodyBytes,
    engine: () => loading,
    loadedEngine: () => engine,
    limits,
    connections: connectionLimits(opts),
    admission: { maxRunning: opts.maxRunning, maxQueued: opts.maxQueue },
    ui,
    // Fine-tuning jobs train on the served engine, between its inference steps; the trainer's code is
    // loaded with the first job, not at every start.
    fineTuning: {
      tuner: async () => {
        const [e, { fineTune }, { renderTrainingExamplesAsync }] = await Promise.all([loading, import('../../engine/train/fine-tune.ts'), import('../../engine/train/render.ts')]);
        return engineTuner(e as WebGpuEngine, { fineTune, renderTrainingExamples: renderTrainingExamplesAsync });
      },
    },
  });
  const metricsServer = opts.metricsPort === undefined ? undefined : await startMetricsServer({ metrics: app.metrics, readiness: app.readiness, port: opts.metricsPort, host: opts.metricsHost }).catch(async (e: Error) => {
    await app.close(0);
    throw new Error(`cannot listen on ${opts.metricsHost}:${opts.metricsPort} (--metrics-host, --metrics-port): ${e.message}`);
  });
  if (metricsServer) logger.info({ url: metricsServer.url }, 'metrics listening');
  let address: Awaited<ReturnType<typeof app.http.listen>>;
  try {
    address = await app.http.listen(opts.port, opts.host);
  } catch (e) {
    await app.opened.close();
    await metricsServer?.close();
    throw new Error(`cannot listen on ${opts.host}:${opts.port} (--host, --port): ${(e as Error).message}`);
  }
  await firstKey(app.opened, opts.firstKeyPlan, logger).catch(async (e: Error) => {
    await app.close(0);
    await metricsServer?.close();
    throw e;
  });
  try {
    logger.info({ model, store: app.opened.where }, 'loading model');
    const { loadEngine } = await import('../../engine/node.ts');
    let logged = -1;
    let downloaded = 0;
    engine = await loadEngine({
      model,
      adapter,
      // The engine's sequence slots match the generations admission lets run at once.
      maxSequences: opts.maxRunning,
      onDownloadProgress: (received, total) => {
        const tenth = total ? Math.floor((received / total) * 10) : 0;
        if (tenth > downloaded) logger.info({ received, total }, 'downloading model');
        downloaded = Math.max(downloaded, tenth);
      },
      onProgress: (loaded, total) => {
        const quarter = total > 0 ? Math.floor((loaded / total) * 4) : 4;
        if (quarter > logged) logger.info({ loaded, total }, 'loading model');
        logged = Math.max(logged, quarter);
      },
    });
    const stats = engine.stats();
    logger.info({ name: engine.info.name, contextLength: engine.info.contextLength, adapter: stats.adapter, ...(stats.workerThreads ? { workerThreads: stats.workerThreads } : {}), ...(stats.chains.ffnLayers + stats.chains.qkvLayers > 0 ? { chainedLayers: stats.chains } : {}) }, 'model loaded');
    // Grammar workers start, and the kernels' pipelines compile, now: not in the first request.
    await Promise.all([engine.grammars?.warm?.(), engine.warmUp()]);
    loaded(engine);
    app.readiness.modelLoaded();
  } catch (e) {
    failed(e);
    await app.close(0);
    await metricsServer?.close();
    throw e;
  }

  logger.info({ url: address.url, store: app.opened.where }, 'listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    try {
      await app.close(opts.drainSeconds * 1000);
      await metricsServer?.close();
      await engine!.dispose();
      logger.info({}, 'stopped');
      process.exit(0);
    } catch (e) {
      logger.error({ err: e }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

function connectionLimits(opts: ServeOptions): Partial<ConnectionLimits> {
  if (opts.headersTimeout > opts.requestTimeout) {
    throw new Error(`--headers-timeout (${opts.headersTimeout}) must not exceed --request-timeout (${opts.requestTimeout})`);
  }
  return {
    maxConnections: opts.maxConnections,
    headersTimeoutMs: opts.headersTimeout * 1000,
    requestTimeoutMs: opts.requestTimeout * 1000,
    keepAliveTimeoutMs: opts.keepAliveTimeout * 1000,
  };
}

function resolveModel(flag: string | undefined): string {
  const model = flag ?? process.env.SVC_MODEL ?? (existsSync(DEFAULT_MODEL) ? DEFAULT_MODEL : undefined);
  if (!model) throw new Error(`no model: pass --model <path-or-url> (or set SVC_MODEL); the default ${DEFAULT_MODEL} is not there`);
  if (!/^https?:\/\//i.test(model) && !existsSync(model)) throw new Error(`model file not found: ${model}`);
  return model;
}

/**
 * A first start on an empty SQLite store makes one key, on `plan` and paid (it is the operator's own),
 * and prints it once on stdout: clone, install, serve, and there is a key to call with. Shared stores
 * (PostgreSQL, several replicas starting at once) get their keys from `svc keys create --store` instead.
 */
async function firstKey(opened: OpenedStore, plan: string, logger: HttpLogger): Promise<void> {
  if (opened.kind !== 'sqlite') return;
  const now = Date.now();
  if ((await opened.admin.listKeys({ includeRevoked: true, now })).length > 0) return;
  const created = await opened.admin.createAccount({ plan, mode: 'live', now });
  await opened.admin.setPlan(created.account.id, { plan, paid: true }, now);
  logger.info({ key: created.key.prefix, plan }, 'no keys yet: made one (printed once on stdout)');
  process.stdout.write(`First start: an API key on the ${plan} plan was made. It is shown only this once; keep it:\n${created.secret}\n`);
}
