/**
 * The service, transport-free: an operation name and a request context in, an Outcome out. Transports
 * (adapters/http) map their routes to these operations and write the outcome; nothing here knows HTTP.
 */
import type { TextEngine } from '../engine/types.ts';
import { AccessControl, type Caller } from './access.ts';
import { Admission, type AdmissionLimits } from './admission.ts';
import { systemClock, type Clock } from './clock.ts';
import type { Outcome, RequestContext, ServiceParts } from './context.ts';
import { ApiError, toApiError } from './errors.ts';
import { chatCompletions } from './handlers/chat-completions.ts';
import { health } from './handlers/health.ts';
import { infer } from './handlers/infer.ts';
import { responses } from './handlers/responses.ts';
import { deleteModel, listModels, retrieveModel } from './handlers/models.ts';
import { usage } from './handlers/usage.ts';
import { createFile, deleteFile, listFiles, retrieveFile } from './handlers/files.ts';
import { cancelJob, createJob, listJobEvents, listJobs, retrieveJob } from './handlers/fine-tuning.ts';
import { AdapterCache, DEFAULT_ADAPTER_CACHE } from './fine-tuning/adapter-cache.ts';
import { JobRunner, type RunnerOptions } from './fine-tuning/runner.ts';
import type { FineTuning } from './fine-tuning/service-parts.ts';
import type { Tuner } from './fine-tuning/tuner.ts';
import { silentLogger, type Logger } from './logger.ts';
import type { PlanCatalog } from './plans.ts';
import { MemoryLimits, type Limits } from './limits.ts';
import type { RateLimitState } from './rate-limiter.ts';
import type { SpecialistRegistry } from './specialists/registry.ts';
import type { Store } from './store.ts';

export type Operation =
  | 'health'
  | 'chat.completions'
  | 'responses'
  | 'infer'
  | 'models.list'
  | 'models.retrieve'
  | 'models.delete'
  | 'usage'
  | 'files.create'
  | 'files.list'
  | 'files.retrieve'
  | 'files.delete'
  | 'fine_tuning.jobs.create'
  | 'fine_tuning.jobs.list'
  | 'fine_tuning.jobs.retrieve'
  | 'fine_tuning.jobs.events'
  | 'fine_tuning.jobs.cancel';

export interface FineTuningOptions {
  /** Trains jobs and loads fine-tuned adapters; without it jobs are accepted and wait for a replica that has one. */
  tuner?: Tuner | (() => Promise<Tuner>);
  runner?: Partial<RunnerOptions>;
  /** Fine-tuned adapters kept loaded on this replica (default DEFAULT_ADAPTER_CACHE). */
  adapterCache?: number;
}

export interface ServiceOptions {
  /** The engine, or a function that gives it; either way it is only touched by requests that reach the model. */
  engine: TextEngine | (() => Promise<TextEngine>);
  store: Store;
  /** The per-minute windows and quota holds (default: in this process's memory; replicas share Redis's). */
  limits?: Limits;
  plans: PlanCatalog;
  specialists: SpecialistRegistry;
  clock?: Clock;
  logger?: Logger;
  /** Generations running at once and waiting beyond them (default DEFAULT_ADMISSION). */
  admission?: AdmissionLimits;
  /** Reported by /health; the caller reads it (package.json's in Node: adapters/config-node.ts). */
  version: string;
  /** Fine-tuning, where the store keeps it: the runner starts with the service and stops with close(). */
  fineTuning?: FineTuningOptions;
}

type Handler = (svc: ServiceParts, caller: Caller, ctx: RequestContext) => Promise<Outcome>;

const AUTHENTICATED: Record<Exclude<Operation, 'health'>, Handler> = {
  'chat.completions': chatCompletions,
  responses,
  infer,
  'models.list': listModels,
  'models.retrieve': retrieveModel,
  'models.delete': deleteModel,
  usage,
  'files.create': createFile,
  'files.list': listFiles,
  'files.retrieve': retrieveFile,
  'files.delete': deleteFile,
  'fine_tuning.jobs.create': createJob,
  'fine_tuning.jobs.list': listJobs,
  'fine_tuning.jobs.retrieve': retrieveJob,
  'fine_tuning.jobs.events': listJobEvents,
  'fine_tuning.jobs.cancel': cancelJob,
};

export class Service {
  private readonly parts: ServiceParts;

  constructor(opts: ServiceOptions) {
    opts.plans.checkSpecialists((n) => opts.specialists.has(n));
    const clock = opts.clock ?? systemClock;
    const logger = opts.logger ?? silentLogger;
    this.parts = {
      access: new AccessControl(opts.store, opts.plans, opts.limits ?? new MemoryLimits(clock), clock, logger),
      specialists: opts.specialists,
      plans: opts.plans,
      store: opts.store,
      clock,
      admission: new Admission(opts.admission),
      engine: engineProvider(opts.engine),
      version: opts.version,
      startedAt: clock.now(),
      logger,
      fineTuning: fineTuningParts(opts, clock, logger),
    };
    this.parts.fineTuning?.runner?.start();
  }

  /** Stops background work (a fine-tuning job in training is left to resume from its checkpoint). */
  async close(): Promise<void> {
    await this.parts.fineTuning?.runner?.stop();
  }

  /** The fine-tuning runner, when this service trains (for tests and operators). */
  get fineTuningRunner(): JobRunner | undefined {
    return this.parts.fineTuning?.runner;
  }

  /** The fine-tuned adapters loaded on this replica, when it serves them (for operators and tests). */
  get fineTuningAdapters(): AdapterCache | undefined {
    return this.parts.fineTuning?.adapters;
  }

  /** The generations running and waiting now (for operators and tests). */
  get admission(): Admission {
    return this.parts.admission;
  }

  async handle(op: Operation, ctx: RequestContext): Promise<Outcome> {
    let caller: Caller | undefined;
    try {
      if (op === 'health') return health(this.parts);
      caller = await this.parts.access.authenticate(ctx.authorization);
      ctx.record.key = caller.key.prefix;
      ctx.record.keyMode = caller.key.mode;
      ctx.record.accountId = caller.account.id;
      this.parts.access.requireActive(caller);
      const outcome = await AUTHENTICATED[op](this.parts, caller, ctx);
      return { ...outcome, rateLimit: caller.rateLimit };
    } catch (e) {
      return this.failure(e, ctx, caller?.rateLimit);
    }
  }

  /**
   * Whether an `Authorization` value names a usable key, for transports that authenticate a connection
   * once before its requests (a WebSocket upgrade): the refusal as an outcome, or null. Each request on
   * the connection is still authenticated, limited and counted on its own.
   */
  async checkKey(authorization: string | undefined, logger: RequestContext['logger']): Promise<(Outcome & { kind: 'json'; error: ApiError }) | null> {
    try {
      await this.parts.access.authenticate(authorization);
      return null;
    } catch (e) {
      return this.failure(e, { logger, signal: new AbortController().signal });
    }
  }

  /** An error as an outcome; faults of ours are logged here and reach the caller only as a generic 500. */
  failure(e: unknown, ctx: Pick<RequestContext, 'logger' | 'signal'> & { record?: RequestContext['record'] }, rateLimit?: RateLimitState): Outcome & { kind: 'json'; error: ApiError } {
    const err = toApiError(e);
    if (ctx.record) ctx.record.errorCode = err.code ?? err.type;
    if (err.status >= 500 && !(e instanceof ApiError) && !ctx.signal.aborted) ctx.logger.error({ err: e }, 'request failed');
    return { kind: 'json', status: err.status, body: err.toBody(), rateLimit, error: err };
  }
}

function fineTuningParts(opts: ServiceOptions, clock: Clock, logger: Logger): FineTuning | undefined {
  const store = opts.store.fineTuning;
  if (!store) return undefined;
  const given = opts.fineTuning?.tuner;
  if (!given) return { store };
  const tuner = engineProvider<Tuner>(given);
  const adapters = new AdapterCache(store, tuner, opts.fineTuning?.adapterCache ?? DEFAULT_ADAPTER_CACHE);
  const systemPrompt = (name: string) => opts.specialists.get(name)?.systemPrompt || undefined;
  return { store, adapters, runner: new JobRunner(store, tuner, clock, logger, opts.fineTuning?.runner, adapters, systemPrompt) };
}

function engineProvider<T extends object>(engine: T | (() => Promise<T>)): () => Promise<T> {
  if (typeof engine !== 'function') return () => Promise.resolve(engine);
  let pending: Promise<T> | undefined;
  return () => {
    // A failed load is retried by the next request instead of failing every request forever.
    pending ??= engine().catch((e) => {
      pending = undefined;
      throw e;
    });
    return pending;
  };
}
