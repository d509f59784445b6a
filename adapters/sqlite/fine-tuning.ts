/**
 * Fine-tuning on SQLite (tables ft_*, migration 3). Every change of a job's status and its event are one
 * transaction, as is a job's completion (model, adapter, status, usage), so a crash leaves either all of
 * it or none. Claims are IMMEDIATE transactions: two processes on one file cannot take the same job.
 */
import type { Completion, FileRecord, FineTunedModelRecord, FineTuningStore, JobEventRecord, JobRecord, JobStatus, NewJobEvent, Page } from '../../protocol/fine-tuning/records.ts';
import { OPEN_STATUSES } from '../../protocol/fine-tuning/records.ts';
import {
  EVENT_COLUMNS,
  eventValues,
  FILE_COLUMNS,
  JOB_COLUMNS,
  jobValues,
  MODEL_COLUMNS,
  toEvent,
  toFile,
  toJob,
  toModel,
  type EventRow,
  type FileRow,
  type JobRow,
  type ModelRow,
} from '../fine-tuning-rows.ts';
import type { Db } from './db.ts';

const blob = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const bytes = (b: Buffer) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

export class SqliteFineTuning implements FineTuningStore {
  private readonly insertEvent;

  constructor(private readonly db: Db) {
    this.insertEvent = db.prepare('INSERT INTO ft_job_events (id, job_id, created_at, level, message, type, data) VALUES (?, ?, ?, ?, ?, ?, ?)');
  }

  createFile(f: FileRecord, content: Uint8Array): void {
    this.db
      .prepare(`INSERT INTO ft_files (${FILE_COLUMNS}, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
      .run(f.id, f.accountId, f.filename, f.purpose, f.bytes, f.lines, f.createdAt, blob(content));
  }

  file(accountId: number, id: string): FileRecord | undefined {
    const r = this.db.prepare<[string, number], FileRow>(`SELECT ${FILE_COLUMNS} FROM ft_files WHERE id = ? AND account_id = ?`).get(id, accountId);
    return r && toFile(r);
  }

  fileContent(accountId: number, id: string): Uint8Array | undefined {
    const r = this.db.prepare<[string, number], { content: Buffer }>('SELECT content FROM ft_files WHERE id = ? AND account_id = ?').get(id, accountId);
    return r && bytes(r.content);
  }

  listFiles(accountId: number, page: Page & { purpose?: string }): FileRecord[] {
    const rows = this.db
      .prepare<unknown[], FileRow>(
        `SELECT ${FILE_COLUMNS} FROM ft_files WHERE account_id = ? AND (? IS NULL OR purpose = ?)
           AND (? IS NULL OR seq < (SELECT seq FROM ft_files WHERE id = ? AND account_id = ?)) ORDER BY seq DESC LIMIT ?`,
      )
      .all(accountId, page.purpose ?? null, page.purpose ?? null, page.after ?? null, page.after ?? null, accountId, page.limit);
    return rows.map(toFile);
  }

  deleteFile(accountId: number, id: string): boolean {
    return this.db.prepare('DELETE FROM ft_files WHERE id = ? AND account_id = ?').run(id, accountId).changes === 1;
  }

  fileUsage(accountId: number): { files: number; bytes: number } {
    const r = this.db.prepare<[number], { n: number; b: number }>('SELECT count(*) AS n, coalesce(sum(bytes), 0) AS b FROM ft_files WHERE account_id = ?').get(accountId)!;
    return { files: r.n, bytes: r.b };
  }

  openJobCount(accountId: number): number {
    return this.db.prepare<[number], { n: number }>("SELECT count(*) AS n FROM ft_jobs WHERE account_id = ? AND status IN ('validating_files', 'queued', 'running')").get(accountId)!.n;
  }

  createJob(job: JobRecord, event: NewJobEvent): void {
    this.db.transaction(() => {
      this.db.prepare(`INSERT INTO ft_jobs (${JOB_COLUMNS}) VALUES (${marks(16)})`).run(...jobValues(job));
      this.insertEvent.run(...eventValues(event));
    })();
  }

  job(accountId: number, id: string): JobRecord | undefined {
    const r = this.db.prepare<[string, number], JobRow>(`SELECT ${JOB_COLUMNS} FROM ft_jobs WHERE id = ? AND account_id = ?`).get(id, accountId);
    return r && toJob(r);
  }

  listJobs(accountId: number, page: Page): JobRecord[] {
    const rows = this.db
      .prepare<unknown[], JobRow>(
        `SELECT ${JOB_COLUMNS} FROM ft_jobs WHERE account_id = ?
           AND (? IS NULL OR seq < (SELECT seq FROM ft_jobs WHERE id = ? AND account_id = ?)) ORDER BY seq DESC LIMIT ?`,
      )
      .all(accountId, page.after ?? null, page.after ?? null, accountId, page.limit);
    return rows.map(toJob);
  }

  jobsToValidate(limit: number): JobRecord[] {
    return this.db.prepare<[number], JobRow>(`SELECT ${JOB_COLUMNS} FROM ft_jobs WHERE status = 'validating_files' ORDER BY seq LIMIT ?`).all(limit).map(toJob);
  }

  transitionJob(id: string, from: readonly JobStatus[], to: JobStatus, change: { event: NewJobEvent; error?: JobRecord['error']; finishedAt?: number; runner?: string }): boolean {
    return this.db.transaction(() => {
      const r = this.db
        .prepare(
          `UPDATE ft_jobs SET status = ?, error = coalesce(?, error), finished_at = coalesce(?, finished_at), lease_until = 0
           WHERE id = ? AND status IN (${marks(from.length)}) AND (? IS NULL OR status <> 'running' OR runner = ?)`,
        )
        .run(to, change.error ? JSON.stringify(change.error) : null, change.finishedAt ?? null, id, ...from, change.runner ?? null, change.runner ?? null);
      if (r.changes !== 1) return false;
      this.insertEvent.run(...eventValues(change.event));
      if (!OPEN_STATUSES.includes(to)) this.db.prepare('DELETE FROM ft_checkpoints WHERE job_id = ?').run(id);
      return true;
    }).immediate();
  }

  claimJob(runner: string, now: number, leaseUntil: number): JobRecord | undefined {
    return this.db.transaction(() => {
      // A lapsed running job first: it was started before anything still queued.
      const r = this.db
        .prepare<[number], JobRow>(
          `SELECT ${JOB_COLUMNS} FROM ft_jobs WHERE status = 'queued' OR (status = 'running' AND lease_until < ?)
           ORDER BY status = 'running' DESC, seq LIMIT 1`,
        )
        .get(now);
      if (!r) return undefined;
      this.db.prepare("UPDATE ft_jobs SET status = 'running', runner = ?, lease_until = ? WHERE id = ?").run(runner, leaseUntil, r.id);
      return { ...toJob(r), status: 'running' as const };
    }).immediate();
  }

  renewLease(id: string, runner: string, leaseUntil: number): boolean {
    return this.db.prepare("UPDATE ft_jobs SET lease_until = ? WHERE id = ? AND runner = ? AND status = 'running'").run(leaseUntil, id, runner).changes === 1;
  }

  releaseLease(id: string, runner: string): void {
    this.db.prepare("UPDATE ft_jobs SET lease_until = 0 WHERE id = ? AND runner = ? AND status = 'running'").run(id, runner);
  }

  addJobEvent(event: NewJobEvent): void {
    this.insertEvent.run(...eventValues(event));
  }

  listJobEvents(jobId: string, page: Page): JobEventRecord[] {
    const rows = this.db
      .prepare<unknown[], EventRow>(
        `SELECT ${EVENT_COLUMNS} FROM ft_job_events WHERE job_id = ?
           AND (? IS NULL OR seq < (SELECT seq FROM ft_job_events WHERE id = ? AND job_id = ?)) ORDER BY seq DESC LIMIT ?`,
      )
      .all(jobId, page.after ?? null, page.after ?? null, jobId, page.limit);
    return rows.map(toEvent);
  }

  saveCheckpoint(jobId: string, step: number, state: Uint8Array, now: number): boolean {
    // Only for a job still running: a late save after a cancel must not leave a checkpoint behind.
    return this.db
      .prepare(
        `INSERT INTO ft_checkpoints (job_id, step, state, created_at) SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM ft_jobs WHERE id = ? AND status = 'running')
         ON CONFLICT (job_id) DO UPDATE SET step = excluded.step, state = excluded.state, created_at = excluded.created_at`,
      )
      .run(jobId, step, blob(state), now, jobId).changes === 1;
  }

  checkpoint(jobId: string): { step: number; state: Uint8Array } | undefined {
    const r = this.db.prepare<[string], { step: number; state: Buffer }>('SELECT step, state FROM ft_checkpoints WHERE job_id = ?').get(jobId);
    return r && { step: r.step, state: bytes(r.state) };
  }

  completeJob(c: Completion): 'done' | 'name-taken' | 'not-running' {
    return this.db.transaction(() => {
      const job = this.db.prepare<[string], { status: string; runner: string | null; key_id: number }>('SELECT status, runner, key_id FROM ft_jobs WHERE id = ?').get(c.jobId);
      if (!job || job.status !== 'running' || job.runner !== c.runner) return 'not-running' as const;
      const m = c.model;
      const added = this.db
        .prepare('INSERT INTO ft_models (name, account_id, specialist, job_id, adapter, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING')
        .run(m.name, m.accountId, m.specialist, m.jobId, blob(c.adapter), m.createdAt);
      if (added.changes !== 1) return 'name-taken' as const;
      this.db
        .prepare("UPDATE ft_jobs SET status = 'succeeded', fine_tuned_model = ?, trained_tokens = ?, finished_at = ?, lease_until = 0 WHERE id = ?")
        .run(m.name, c.trainedTokens, c.finishedAt, c.jobId);
      this.db.prepare('INSERT INTO ft_usage (job_id, key_id, period_start, trained_tokens) VALUES (?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING').run(c.jobId, job.key_id, c.periodStart, c.trainedTokens);
      this.db.prepare('DELETE FROM ft_checkpoints WHERE job_id = ?').run(c.jobId);
      this.insertEvent.run(...eventValues(c.event));
      return 'done' as const;
    }).immediate();
  }

  fineTunedModel(accountId: number, name: string): FineTunedModelRecord | undefined {
    const r = this.db.prepare<[string, number], ModelRow>(`SELECT ${MODEL_COLUMNS} FROM ft_models WHERE name = ? AND account_id = ?`).get(name, accountId);
    return r && toModel(r);
  }

  listFineTunedModels(accountId: number): FineTunedModelRecord[] {
    return this.db.prepare<[number], ModelRow>(`SELECT ${MODEL_COLUMNS} FROM ft_models WHERE account_id = ? ORDER BY created_at, name`).all(accountId).map(toModel);
  }

  adapter(accountId: number, name: string): Uint8Array | undefined {
    const r = this.db.prepare<[string, number], { adapter: Buffer }>('SELECT adapter FROM ft_models WHERE name = ? AND account_id = ?').get(name, accountId);
    return r && bytes(r.adapter);
  }

  deleteFineTunedModel(accountId: number, name: string): boolean {
    return this.db.prepare('DELETE FROM ft_models WHERE name = ? AND account_id = ?').run(name, accountId).changes === 1;
  }

  trainingUsage(keyId: number, periodStart: number): { trainedTokens: number; jobs: number } {
    const r = this.db.prepare<[number, number], { t: number; n: number }>('SELECT coalesce(sum(trained_tokens), 0) AS t, count(*) AS n FROM ft_usage WHERE key_id = ? AND period_start = ?').get(keyId, periodStart)!;
    return { trainedTokens: r.t, jobs: r.n };
  }
}
