/**
 * `svc serve`: load the model, open the data folder and serve the API. SIGTERM/SIGINT drain: in-flight
 * requests finish (new ones get 503), then the process exits; a second signal exits at once.
 */
import { type Command } from 'commander';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createApp } from '../../adapters/app.ts';
import { DEFAULT_MAX_BODY_BYTES } from '../../adapters/http/server.ts';
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from '../../adapters/http/connection-limits.ts';
import { DEFAULT_ADMISSION } from '../../protocol/admission.ts';
import { createLogger } from '../../adapters/http/logger.ts';
import { resolveDataDir } from '../../adapters/sqlite/db.ts';
import type { TextEngine } from '../../engine/types.ts';
import { intOption } from '../options.ts';
import { DATA_OPTION_HELP } from './keys.ts';

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
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve the OpenAI-compatible API on one model')
    .option('--model <path-or-url>', `GGUF file or https URL (default: $SVC_MODEL, else ${DEFAULT_MODEL} when present)`)
    .option('--port <port>', 'TCP port; 0 picks a free one', intOption('--port', 0, 65535), 8080)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--data <dir>', DATA_OPTION_HELP)
    .option('--adapter <choice>', 'WebGPU adapter: auto, gpu, swiftshader, llvmpipe (default: $SVC_ADAPTER or auto)')
    .option('--max-body-bytes <n>', 'largest request body accepted', intOption('--max-body-bytes', 1), DEFAULT_MAX_BODY_BYTES)
    .option('--drain-seconds <n>', 'on SIGTERM/SIGINT, how long in-flight requests may take to finish', intOption('--drain-seconds', 0), 30)
    .option('--max-connections <n>', 'open connections at most; more are closed at once (keep below ulimit -n)', intOption('--max-connections', 1), DEFAULT_CONNECTION_LIMITS.maxConnections)
    .option('--max-running <n>', 'generations the engine runs at once', intOption('--max-running', 1, 256), DEFAULT_ADMISSION.maxRunning)
    .option('--max-queue <n>', 'requests that may wait for a running place; more get 503 overloaded', intOption('--max-queue', 0), DEFAULT_ADMISSION.maxQueued)
    .option('--headers-timeout <s>', "seconds a connection may take to send a request's headers (408 after)", intOption('--headers-timeout', 1), DEFAULT_CONNECTION_LIMITS.headersTimeoutMs / 1000)
    .option('--request-timeout <s>', 'seconds a request may take to arrive whole, body included (408 after)', intOption('--request-timeout', 1), DEFAULT_CONNECTION_LIMITS.requestTimeoutMs / 1000)
    .option('--keep-alive-timeout <s>', 'seconds an idle kept-alive connection stays open', intOption('--keep-alive-timeout', 1), DEFAULT_CONNECTION_LIMITS.keepAliveTimeoutMs / 1000)
    .option('--log-level <level>', 'pino level: debug, info, warn, error', process.env.SVC_LOG_LEVEL ?? 'info')
    .action((opts: ServeOptions) => serve(opts));
}

async function serve(opts: ServeOptions): Promise<void> {
  const model = resolveModel(opts.model);
  const logger = createLogger(opts.logLevel);
  const dataDir = resolveDataDir(opts.data);

  let engine: TextEngine | undefined;
  // Data folder and config first: a mistake there should not wait for the model to load.
  const app = createApp({ dataDir, logger, maxBodyBytes: opts.maxBodyBytes, engine: async () => engine!, connections: connectionLimits(opts), admission: { maxRunning: opts.maxRunning, maxQueued: opts.maxQueue } });
  try {
    logger.info({ model, dataDir }, 'loading model');
    const { loadEngine } = await import('../../engine/node.ts');
    let logged = -1;
    let downloaded = 0;
    engine = await loadEngine({
      model,
      adapter: opts.adapter,
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
    logger.info({ name: engine.info.name, contextLength: engine.info.contextLength }, 'model loaded');
  } catch (e) {
    app.db.close();
    throw e;
  }

  const address = await app.http.listen(opts.port, opts.host);
  logger.info({ url: address.url, dataDir }, 'listening');

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
