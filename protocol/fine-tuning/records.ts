/**
 * What fine-tuning keeps, and the storage it needs (SQLite: adapters/sqlite/fine-tuning.ts, PostgreSQL:
 * adapters/postgres/fine-tuning.ts). Everything belongs to an account: reads take the account id, so one
 * account can never name another's file, job or model into existence. Times are ms since the epoch.
 */
import type { Awaitable } from '../store.ts';

export interface FileRecord {
  /** `file-…` */
  id: string;
  accountId: number;
  filename: string;
  purpose: string;
  bytes: number;
  /** Conversations in the file (validated on upload). */
  lines: number;
  createdAt: number;
}

export type JobStatus = 'validating_files' | 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
export const OPEN_STATUSES: readonly JobStatus[] = ['validating_files', 'queued', 'running'];

/** The settings a job trains with, fixed when it is created ('auto' already resolved to numbers). */
export interface JobHyperparameters {
  nEpochs: number;
  batchSize: number;
  learningRateMultiplier: number;
  loraRank: number;
  loraAlpha: number;
}

export interface JobError {
  code: string;
  message: string;
  param: string | null;
}

export interface JobRecord {
  /** `ftjob-…` */
  id: string;
  accountId: number;
  /** The key that created it: training tokens count in its /v1/usage. */
  keyId: number;
  /** The model name as the caller gave it (`svc-chat`). */
  model: string;
  specialist: string;
  trainingFile: string;
  validationFile: string | null;
  hyperparameters: JobHyperparameters;
  suffix: string | null;
  seed: number;
  status: JobStatus;
  fineTunedModel: string | null;
  error: JobError | null;
  trainedTokens: number | null;
  createdAt: number;
  finishedAt: number | null;
}

export interface NewJobEvent {
  jobId: string;
  createdAt: number;
  level: 'info' | 'warn' | 'error';
  message: string;
  type: 'message' | 'metrics';
  data: Record<string, unknown> | null;
}

export interface JobEventRecord extends NewJobEvent {
  /** `ftevent-…`; events of a job are ordered by `seq`. */
  id: string;
  seq: number;
}

export interface FineTunedModelRecord {
  /** The model name, `ft:svc-<specialist>:<account>:<suffix>`. */
  name: string;
  accountId: number;
  specialist: string;
  jobId: string;
  /** Size of the adapter file (GGUF LoRA). */
  bytes: number;
  createdAt: number;
}

export interface Page {
  /** Return items after (older than, for newest-first lists) the one with this id. */
  after?: string;
  limit: number;
}

/** The finished job's outputs, written together or not at all. */
export interface Completion {
  jobId: string;
  /** The runner that claimed the job: a job cancelled (or reclaimed) meanwhile is left alone. */
  runner: string;
  model: Omit<FineTunedModelRecord, 'bytes'>;
  adapter: Uint8Array;
  trainedTokens: number;
  /** The billing period the training tokens count in. */
  periodStart: number;
  finishedAt: number;
  event: NewJobEvent;
}

export interface FineTuningStore {
  createFile(file: FileRecord, content: Uint8Array): Awaitable<void>;
  file(accountId: number, id: string): Awaitable<FileRecord | undefined>;
  fileContent(accountId: number, id: string): Awaitable<Uint8Array | undefined>;
  /** Newest first. */
  listFiles(accountId: number, page: Page & { purpose?: string }): Awaitable<FileRecord[]>;
  /** False when there was no such file. */
  deleteFile(accountId: number, id: string): Awaitable<boolean>;
  /** What the account keeps in files now (its storage limit). */
  fileUsage(accountId: number): Awaitable<{ files: number; bytes: number }>;

  /** The job and its first event, together. */
  createJob(job: JobRecord, event: NewJobEvent): Awaitable<void>;
  job(accountId: number, id: string): Awaitable<JobRecord | undefined>;
  /** Newest first. */
  listJobs(accountId: number, page: Page): Awaitable<JobRecord[]>;
  /** Jobs of the account not yet finished (validating_files, queued, running). */
  openJobCount(accountId: number): Awaitable<number>;
  /** Jobs waiting for their files to be checked, oldest first (any account). */
  jobsToValidate(limit: number): Awaitable<JobRecord[]>;
  /**
   * Moves a job from one status to another (with an event, and finishedAt/error when it ends), only
   * if it is still in `from`; false when it was not (cancelled meanwhile, say).
   */
  transitionJob(id: string, from: readonly JobStatus[], to: JobStatus, change: { event: NewJobEvent; error?: JobError; finishedAt?: number; runner?: string }): Awaitable<boolean>;
  /**
   * Takes the oldest queued job, or a running one whose runner's lease has lapsed (a replica that died),
   * for `runner` until `leaseUntil`; the job is `running` when this returns. Atomic across replicas.
   */
  claimJob(runner: string, now: number, leaseUntil: number): Awaitable<JobRecord | undefined>;
  /** Extends the lease; false when the job is no longer this runner's or no longer running (cancelled). */
  renewLease(id: string, runner: string, leaseUntil: number): Awaitable<boolean>;
  /** Lets another runner take the job at once (this one is shutting down); the job stays `running`. */
  releaseLease(id: string, runner: string): Awaitable<void>;
  addJobEvent(event: NewJobEvent): Awaitable<void>;
  /** Newest first, as the provider lists them. */
  listJobEvents(jobId: string, page: Page): Awaitable<JobEventRecord[]>;

  /** The latest checkpoint replaces the one before (one per job); false (nothing kept) once the job is no longer running. */
  saveCheckpoint(jobId: string, step: number, state: Uint8Array, now: number): Awaitable<boolean>;
  checkpoint(jobId: string): Awaitable<{ step: number; state: Uint8Array } | undefined>;

  /**
   * Stores the model and its adapter, marks the job succeeded (freeing its checkpoint) and counts its
   * training tokens, in one transaction. 'name-taken' when the account already has a model of that name
   * (pick another), 'not-running' when the job is no longer this runner's to finish.
   */
  completeJob(c: Completion): Awaitable<'done' | 'name-taken' | 'not-running'>;
  fineTunedModel(accountId: number, name: string): Awaitable<FineTunedModelRecord | undefined>;
  listFineTunedModels(accountId: number): Awaitable<FineTunedModelRecord[]>;
  adapter(accountId: number, name: string): Awaitable<Uint8Array | undefined>;
  /** Removes the model and its adapter (its job keeps the name it produced); false when there was none. */
  deleteFineTunedModel(accountId: number, name: string): Awaitable<boolean>;

  /** Training tokens and finished jobs counted for this key in the period. */
  trainingUsage(keyId: number, periodStart: number): Awaitable<{ trainedTokens: number; jobs: number }>;
}
