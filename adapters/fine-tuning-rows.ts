/**
 * Rows of the fine-tuning tables ↔ records, shared by SQLite and PostgreSQL (same column names; pg's
 * bigints arrive as strings, hence Number()). JSON columns hold the hyperparameters, errors and event data.
 */
import type { FileRecord, FineTunedModelRecord, JobEventRecord, JobRecord, JobStatus, NewJobEvent } from '../protocol/fine-tuning/records.ts';
import { randomBase62 } from '../protocol/ids.ts';

type Int = number | string;

export const FILE_COLUMNS = 'id, account_id, filename, purpose, bytes, lines, created_at';
export const JOB_COLUMNS = 'id, account_id, key_id, model, specialist, training_file, validation_file, hyperparameters, suffix, seed, status, fine_tuned_model, error, trained_tokens, created_at, finished_at';
export const EVENT_COLUMNS = 'id, seq, job_id, created_at, level, message, type, data';
export const MODEL_COLUMNS = 'name, account_id, specialist, job_id, length(adapter) AS bytes, created_at';

export interface FileRow {
  id: string;
  account_id: Int;
  filename: string;
  purpose: string;
  bytes: Int;
  lines: Int;
  created_at: Int;
}

export function toFile(r: FileRow): FileRecord {
  return { id: r.id, accountId: Number(r.account_id), filename: r.filename, purpose: r.purpose, bytes: Number(r.bytes), lines: Number(r.lines), createdAt: Number(r.created_at) };
}

export interface JobRow {
  id: string;
  account_id: Int;
  key_id: Int;
  model: string;
  specialist: string;
  training_file: string;
  validation_file: string | null;
  hyperparameters: string;
  suffix: string | null;
  seed: Int;
  status: string;
  fine_tuned_model: string | null;
  error: string | null;
  trained_tokens: Int | null;
  created_at: Int;
  finished_at: Int | null;
}

export function toJob(r: JobRow): JobRecord {
  return {
    id: r.id,
    accountId: Number(r.account_id),
    keyId: Number(r.key_id),
    model: r.model,
    specialist: r.specialist,
    trainingFile: r.training_file,
    validationFile: r.validation_file,
    hyperparameters: JSON.parse(r.hyperparameters),
    suffix: r.suffix,
    seed: Number(r.seed),
    status: r.status as JobStatus,
    fineTunedModel: r.fine_tuned_model,
    error: r.error === null ? null : JSON.parse(r.error),
    trainedTokens: r.trained_tokens === null ? null : Number(r.trained_tokens),
    createdAt: Number(r.created_at),
    finishedAt: r.finished_at === null ? null : Number(r.finished_at),
  };
}

/** A job's column values in JOB_COLUMNS order. */
export function jobValues(j: JobRecord): unknown[] {
  return [
    j.id,
    j.accountId,
    j.keyId,
    j.model,
    j.specialist,
    j.trainingFile,
    j.validationFile,
    JSON.stringify(j.hyperparameters),
    j.suffix,
    j.seed,
    j.status,
    j.fineTunedModel,
    j.error === null ? null : JSON.stringify(j.error),
    j.trainedTokens,
    j.createdAt,
    j.finishedAt,
  ];
}

export interface EventRow {
  id: string;
  seq: Int;
  job_id: string;
  created_at: Int;
  level: string;
  message: string;
  type: string;
  data: string | null;
}

export function toEvent(r: EventRow): JobEventRecord {
  return {
    id: r.id,
    seq: Number(r.seq),
    jobId: r.job_id,
    createdAt: Number(r.created_at),
    level: r.level as JobEventRecord['level'],
    message: r.message,
    type: r.type as JobEventRecord['type'],
    data: r.data === null ? null : JSON.parse(r.data),
  };
}

/** An event's values for (id, job_id, created_at, level, message, type, data), with a new id. */
export function eventValues(e: NewJobEvent): unknown[] {
  // Messages are ours, but may quote a caller's file problems: bounded all the same.
  return [`ftevent-${randomBase62(24)}`, e.jobId, e.createdAt, e.level, e.message.slice(0, 4000), e.type, e.data === null ? null : JSON.stringify(e.data)];
}

export interface ModelRow {
  name: string;
  account_id: Int;
  specialist: string;
  job_id: string;
  bytes: Int;
  created_at: Int;
}

export function toModel(r: ModelRow): FineTunedModelRecord {
  return { name: r.name, accountId: Number(r.account_id), specialist: r.specialist, jobId: r.job_id, bytes: Number(r.bytes), createdAt: Number(r.created_at) };
}
