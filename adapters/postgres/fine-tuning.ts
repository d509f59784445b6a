/**
 * Fine-tuning on PostgreSQL (tables ft_*, migration 3), shared by replicas. A job is claimed with
 * FOR UPDATE SKIP LOCKED, so two replicas never train the same job, and a replica that died loses its
 * jobs when its lease lapses. Status changes with their events, and a job's completion (model, adapter,
 * status, usage), are single transactions.
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
import type { Postgres, Queryable } from './pool.ts';
import { bytea, num } from './rows.ts';

const params = (from: number, n: number) => Array.from({ length: n }, (_, i) => `$${from + i}`).join(', ');
const INSERT_EVENT = 'INSERT INTO ft_job_events (id, job_id, created_at, level, message, type, data) VALUES ($1, $2, $3, $4, $5, $6, $7)';
const bytes = (b: Buffer) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

export class PostgresFineTuning implements FineTuningStore {
  constructor(private readonly db: Postgres) {}

  async createFile(f: FileRecord, content: Uint8Array): Promise<void> {
    await this.db.query(`INSERT INTO ft_files (${FILE_COLUMNS}, content) VALUES (${params(1, 8)})`, [f.id, f.accountId, f.filename, f.purpose, f.bytes, f.lines, f.createdAt, bytea(content)]);
  }

  async file(accountId: number, id: string): Promise<FileRecord | undefined> {
    const { rows } = await this.db.query<FileRow>(`SELECT ${FILE_COLUMNS} FROM ft_files WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0] && toFile(rows[0]);
  }

  async fileContent(accountId: number, id: string): Promise<Uint8Array | undefined> {
    const { rows } = await this.db.query<{ content: Buffer }>('SELECT content FROM ft_files WHERE id = $1 AND account_id = $2', [id, accountId]);
    return rows[0] && bytes(rows[0].content);
  }

  async listFiles(accountId: number, page: Page & { purpose?: string }): Promise<FileRecord[]> {
    const { rows } = await this.db.query<FileRow>(
      `SELECT ${FILE_COLUMNS} FROM ft_files WHERE account_id = $1 AND ($2::text IS NULL OR purpose = $2)
         AND ($3::text IS NULL OR seq < (SELECT seq FROM ft_files WHERE id = $3 AND account_id = $1)) ORDER BY seq DESC LIMIT $4`,
      [accountId, page.purpose ?? null, page.after ?? null, page.limit],
    );
    return rows.map(toFile);
  }

  async deleteFile(accountId: number, id: string): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM ft_files WHERE id = $1 AND account_id = $2', [id, accountId]);
    return rowCount === 1;
  }

  async fileUsage(accountId: number): Promise<{ files: number; bytes: number }> {
    const { rows } = await this.db.query<{ n: string; b: string }>('SELECT count(*) AS n, coalesce(sum(bytes), 0)::bigint AS b FROM ft_files WHERE account_id = $1', [accountId]);
    return { files: num(rows[0].n), bytes: num(rows[0].b) };
  }

  async openJobCount(accountId: number): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>("SELECT count(*) AS n FROM ft_jobs WHERE account_id = $1 AND status IN ('validating_files', 'queued', 'running')", [accountId]);
    return num(rows[0].n);
  }

  async createJob(job: JobRecord, event: NewJobEvent): Promise<void> {
    await this.db.transaction(async (q) => {
      await q.query(`INSERT INTO ft_jobs (${JOB_COLUMNS}) VALUES (${params(1, 16)})`, jobValues(job));
      await q.query(INSERT_EVENT, eventValues(event));
    });
  }

  async job(accountId: number, id: string): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM ft_jobs WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0] && toJob(rows[0]);
  }

  async listJobs(accountId: number, page: Page): Promise<JobRecord[]> {
    const { rows } = await this.db.query<JobRow>(
      `SELECT ${JOB_COLUMNS} FROM ft_jobs WHERE account_id = $1
         AND ($2::text IS NULL OR seq < (SELECT seq FROM ft_jobs WHERE id = $2 AND account_id = $1)) ORDER BY seq DESC LIMIT $3`,
      [accountId, page.after ?? null, page.limit],
    );
    return rows.map(toJob);
  }

  async jobsToValidate(limit: number): Promise<JobRecord[]> {
    const { rows } = await this.db.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM ft_jobs WHERE status = 'validating_files' ORDER BY seq LIMIT $1`, [limit]);
    return rows.map(toJob);
  }

  async transitionJob(id: string, from: readonly JobStatus[], to: JobStatus, change: { event: NewJobEvent; error?: JobRecord['error']; finishedAt?: number; runner?: string }): Promise<boolean> {
    return this.db.transaction(async (q) => {
      const { rowCount } = await q.query(
        `UPDATE ft_jobs SET status = $1, error = coalesce($2, error), finished_at = coalesce($3, finished_at), lease_until = 0
         WHERE id = $4 AND status = ANY($5::text[]) AND ($6::text IS NULL OR status <> 'running' OR runner = $6)`,
        [to, change.error ? JSON.stringify(change.error) : null, change.finishedAt ?? null, id, [...from], change.runner ?? null],
      );
      if (rowCount !== 1) return false;
      await q.query(INSERT_EVENT, eventValues(change.event));
      if (!OPEN_STATUSES.includes(to)) await q.query('DELETE FROM ft_checkpoints WHERE job_id = $1', [id]);
      return true;
    });
  }

  async claimJob(runner: string, now: number, leaseUntil: number): Promise<JobRecord | undefined> {
    // A lapsed running job first: it was started before anything still queued. SKIP LOCKED: replicas
    // claiming at once take different jobs instead of waiting on one another.
    const { rows } = await this.db.query<JobRow>(
      `UPDATE ft_jobs SET status = 'running', runner = $1, lease_until = $3
       WHERE id = (SELECT id FROM ft_jobs WHERE status = 'queued' OR (status = 'running' AND lease_until < $2)
                   ORDER BY status = 'running' DESC, seq LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING ${JOB_COLUMNS}`,
      [runner, now, leaseUntil],
    );
    return rows[0] && toJob(rows[0]);
  }

  async renewLease(id: string, runner: string, leaseUntil: number): Promise<boolean> {
    const { rowCount } = await this.db.query("UPDATE ft_jobs SET lease_until = $1 WHERE id = $2 AND runner = $3 AND status = 'running'", [leaseUntil, id, runner]);
    return rowCount === 1;
  }

  async releaseLease(id: string, runner: string): Promise<void> {
    await this.db.query("UPDATE ft_jobs SET lease_until = 0 WHERE id = $1 AND runner = $2 AND status = 'running'", [id, runner]);
  }

  async addJobEvent(event: NewJobEvent): Promise<void> {
    await this.db.query(INSERT_EVENT, eventValues(event));
  }

  async listJobEvents(jobId: string, page: Page): Promise<JobEventRecord[]> {
    const { rows } = await this.db.query<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM ft_job_events WHERE job_id = $1
         AND ($2::text IS NULL OR seq < (SELECT seq FROM ft_job_events WHERE id = $2 AND job_id = $1)) ORDER BY seq DESC LIMIT $3`,
      [jobId, page.after ?? null, page.limit],
    );
    return rows.map(toEvent);
  }

  async saveCheckpoint(jobId: string, step: number, state: Uint8Array, now: number): Promise<boolean> {
    // Only for a job still running: a late save after a cancel must not leave a checkpoint behind.
    const { rowCount } = await this.db.query(
      `INSERT INTO ft_checkpoints (job_id, step, state, created_at) SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM ft_jobs WHERE id = $1 AND status = 'running')
       ON CONFLICT (job_id) DO UPDATE SET step = excluded.step, state = excluded.state, created_at = excluded.created_at`,
      [jobId, step, bytea(state), now],
    );
    return rowCount === 1;
  }

  async checkpoint(jobId: string): Promise<{ step: number; state: Uint8Array } | undefined> {
    const { rows } = await this.db.query<{ step: string; state: Buffer }>('SELECT step, state FROM ft_checkpoints WHERE job_id = $1', [jobId]);
    return rows[0] && { step: num(rows[0].step), state: bytes(rows[0].state) };
  }

  async completeJob(c: Completion): Promise<'done' | 'name-taken' | 'not-running'> {
    return this.db.transaction(async (q: Queryable) => {
      const { rows } = await q.query<{ status: string; runner: string | null; key_id: string }>('SELECT status, runner, key_id FROM ft_jobs WHERE id = $1 FOR UPDATE', [c.jobId]);
      const job = rows[0];
      if (!job || job.status !== 'running' || job.runner !== c.runner) return 'not-running' as const;
      const m = c.model;
      const added = await q.query('INSERT INTO ft_models (name, account_id, specialist, job_id, adapter, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING', [
        m.name,
        m.accountId,
        m.specialist,
        m.jobId,
        bytea(c.adapter),
        m.createdAt,
      ]);
      if (added.rowCount !== 1) return 'name-taken' as const;
      await q.query("UPDATE ft_jobs SET status = 'succeeded', fine_tuned_model = $1, trained_tokens = $2, finished_at = $3, lease_until = 0 WHERE id = $4", [m.name, c.trainedTokens, c.finishedAt, c.jobId]);
      await q.query('INSERT INTO ft_usage (job_id, key_id, period_start, trained_tokens) VALUES ($1, $2, $3, $4) ON CONFLICT (job_id) DO NOTHING', [c.jobId, job.key_id, c.periodStart, c.trainedTokens]);
      await q.query('DELETE FROM ft_checkpoints WHERE job_id = $1', [c.jobId]);
      await q.query(INSERT_EVENT, eventValues(c.event));
      return 'done' as const;
    });
  }

  async fineTunedModel(accountId: number, name: string): Promise<FineTunedModelRecord | undefined> {
    const { rows } = await this.db.query<ModelRow>(`SELECT ${MODEL_COLUMNS} FROM ft_models WHERE name = $1 AND account_id = $2`, [name, accountId]);
    return rows[0] && toModel(rows[0]);
  }

  async listFineTunedModels(accountId: number): Promise<FineTunedModelRecord[]> {
    const { rows } = await this.db.query<ModelRow>(`SELECT ${MODEL_COLUMNS} FROM ft_models WHERE account_id = $1 ORDER BY created_at, name COLLATE "C"`, [accountId]);
    return rows.map(toModel);
  }

  async adapter(accountId: number, name: string): Promise<Uint8Array | undefined> {
    const { rows } = await this.db.query<{ adapter: Buffer }>('SELECT adapter FROM ft_models WHERE name = $1 AND account_id = $2', [name, accountId]);
    return rows[0] && bytes(rows[0].adapter);
  }

  async deleteFineTunedModel(accountId: number, name: string): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM ft_models WHERE name = $1 AND account_id = $2', [name, accountId]);
    return rowCount === 1;
  }

  async trainingUsage(keyId: number, periodStart: number): Promise<{ trainedTokens: number; jobs: number }> {
    const { rows } = await this.db.query<{ t: string; n: string }>('SELECT coalesce(sum(trained_tokens), 0)::bigint AS t, count(*) AS n FROM ft_usage WHERE key_id = $1 AND period_start = $2', [keyId, periodStart]);
    return { trainedTokens: num(rows[0].t), jobs: num(rows[0].n) };
  }
}
