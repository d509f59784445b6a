/**
 * The fine-tuning store on SQLite and on a real PostgreSQL, through the same checks: files and jobs per
 * account, newest-first pages, status changes only from the expected status, claims and leases (a job
 * of a replica that died is taken over once its lease lapses, never while it holds it), checkpoints
 * only for running jobs, completion all-or-nothing and counted once, unique model names.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin } from '../../adapters/admin.ts';
import { loadPlans } from '../../adapters/config-node.ts';
import { openSqliteStore, openStore, type OpenedStore } from '../../adapters/open-store.ts';
import type { FineTuningStore, JobRecord, NewJobEvent } from '../../protocol/fine-tuning/records.ts';
import { postgresAvailable, startPostgres, type PostgresServer } from '../helpers/postgres-server.ts';

const plans = loadPlans();
const opened: OpenedStore[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const o of opened) await o.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Fixture {
  store: FineTuningStore;
  admin: Admin;
}

function event(jobId: string, message: string): NewJobEvent {
  return { jobId, createdAt: 1, level: 'info', message, type: 'message', data: { n: 1 } };
}

let jobs = 0;
function job(accountId: number, keyId: number, extra: Partial<JobRecord> = {}): JobRecord {
  return {
    id: `ftjob-test${++jobs}`,
    accountId,
    keyId,
    model: 'svc-chat',
    specialist: 'chat',
    trainingFile: 'file-a',
    validationFile: null,
    hyperparameters: { nEpochs: 3, batchSize: 1, learningRateMultiplier: 1, loraRank: 8, loraAlpha: 16 },
    suffix: 'bot',
    seed: 42,
    status: 'queued',
    fineTunedModel: null,
    error: null,
    trainedTokens: null,
    createdAt: 1000 + jobs,
    finishedAt: null,
    ...extra,
  };
}

function suite(name: string, open: () => Promise<Fixture>) {
  describe(name, () => {
    let f: Fixture;
    let a: { account: number; key: number };
    let b: { account: number; key: number };
    beforeAll(async () => {
      f = await open();
      const x = await f.admin.createAccount({ plan: 'scale', mode: 'live', now: 1 });
      const y = await f.admin.createAccount({ plan: 'scale', mode: 'live', now: 1 });
      a = { account: x.account.id, key: x.key.id };
      b = { account: y.account.id, key: y.key.id };
    });

    it('keeps files per account, with their bytes, newest first, paged', async () => {
      const s = f.store;
      for (const i of [1, 2, 3]) {
        await s.createFile({ id: `file-${name}-${i}`, accountId: a.account, filename: `f${i}.jsonl`, purpose: 'fine-tune', bytes: 3, lines: i, createdAt: i }, new Uint8Array([i, 0, 255]));
      }
      expect(await s.file(a.account, `file-${name}-2`)).toEqual({ id: `file-${name}-2`, accountId: a.account, filename: 'f2.jsonl', purpose: 'fine-tune', bytes: 3, lines: 2, createdAt: 2 });
      expect(await s.file(b.account, `file-${name}-2`)).toBeUndefined();
      expect([...((await s.fileContent(a.account, `file-${name}-3`)) ?? [])]).toEqual([3, 0, 255]);
      expect(await s.fileContent(b.account, `file-${name}-3`)).toBeUndefined();
      expect((await s.listFiles(a.account, { limit: 2 })).map((x) => x.id)).toEqual([`file-${name}-3`, `file-${name}-2`]);
      expect((await s.listFiles(a.account, { limit: 5, after: `file-${name}-2` })).map((x) => x.id)).toEqual([`file-${name}-1`]);
      expect(await s.listFiles(b.account, { limit: 5 })).toEqual([]);
      expect(await s.fileUsage(a.account)).toEqual({ files: 3, bytes: 9 });
      expect(await s.fileUsage(b.account)).toEqual({ files: 0, bytes: 0 });
      expect(await s.deleteFile(b.account, `file-${name}-1`)).toBe(false);
      expect(await s.deleteFile(a.account, `file-${name}-1`)).toBe(true);
      expect(await s.deleteFile(a.account, `file-${name}-1`)).toBe(false);
    });

    it('creates jobs with their first event, lists them per account, and changes status only from the given ones', async () => {
      const s = f.store;
      const j = job(a.account, a.key, { status: 'validating_files' });
      await s.createJob(j, event(j.id, 'created'));
      expect(await s.openJobCount(a.account)).toBe(1);
      expect(await s.job(a.account, j.id)).toEqual(j);
      expect(await s.job(b.account, j.id)).toBeUndefined();
      expect((await s.jobsToValidate(10)).map((x) => x.id)).toContain(j.id);
      expect(await s.transitionJob(j.id, ['validating_files'], 'queued', { event: event(j.id, 'validated') })).toBe(true);
      expect(await s.transitionJob(j.id, ['validating_files'], 'queued', { event: event(j.id, 'again') })).toBe(false);
      expect(await s.transitionJob(j.id, ['queued'], 'cancelled', { finishedAt: 5, event: event(j.id, 'cancelled') })).toBe(true);
      expect(await s.job(a.account, j.id)).toMatchObject({ status: 'cancelled', finishedAt: 5 });
      const events = await s.listJobEvents(j.id, { limit: 10 });
      expect(events.map((e) => e.message)).toEqual(['cancelled', 'validated', 'created']);
      expect(events[0]).toMatchObject({ jobId: j.id, level: 'info', type: 'message', data: { n: 1 } });
      expect(events[0].id).toMatch(/^ftevent-/);
      expect((await s.listJobEvents(j.id, { limit: 10, after: events[0].id })).map((e) => e.message)).toEqual(['validated', 'created']);
      const failed = job(a.account, a.key);
      await s.createJob(failed, event(failed.id, 'created'));
      const error = { code: 'invalid_training_file', message: 'line 2: bad', param: 'training_file' };
      expect(await s.transitionJob(failed.id, ['queued'], 'failed', { error, finishedAt: 6, event: event(failed.id, 'failed') })).toBe(true);
      expect(await s.job(a.account, failed.id)).toMatchObject({ status: 'failed', error });
      expect(await s.openJobCount(a.account)).toBe(0);
      expect(await s.openJobCount(b.account)).toBe(0);
      const listed = await s.listJobs(a.account, { limit: 10 });
      expect(listed.map((x) => x.id).slice(0, 2)).toEqual([failed.id, j.id]);
      expect((await s.listJobs(a.account, { limit: 10, after: failed.id }))[0].id).toBe(j.id);
      expect(await s.listJobs(b.account, { limit: 10 })).toEqual([]);
    });

    it('claims one job per runner, takes over a lapsed lease only, and keeps checkpoints for running jobs', async () => {
      const s = f.store;
      // Nothing queued is left from the other tests but these.
      while (await s.claimJob('drain', 0, Number.MAX_SAFE_INTEGER)) {
        /* earlier tests' queued jobs */
      }
      const j = job(b.account, b.key);
      await s.createJob(j, event(j.id, 'created'));
      const claimed = await s.claimJob('r1', 100, 200);
      expect(claimed).toMatchObject({ id: j.id, status: 'running' });
      expect(await s.claimJob('r2', 150, 250)).toBeUndefined();
      expect(await s.renewLease(j.id, 'r2', 300)).toBe(false);
      expect(await s.renewLease(j.id, 'r1', 300)).toBe(true);
      expect(await s.claimJob('r2', 250, 350)).toBeUndefined();

      expect(await s.saveCheckpoint(j.id, 4, new Uint8Array([4]), 1)).toBe(true);
      expect(await s.saveCheckpoint(j.id, 8, new Uint8Array([8, 8]), 2)).toBe(true);
      expect(await s.checkpoint(j.id)).toEqual({ step: 8, state: new Uint8Array([8, 8]) });
      // r1 died; its lease lapses and r2 takes the job over with its checkpoint.
      expect(await s.claimJob('r2', 301, 400)).toMatchObject({ id: j.id });
      expect(await s.renewLease(j.id, 'r1', 500)).toBe(false);
      // A graceful stop hands the job over at once.
      await s.releaseLease(j.id, 'r2');
      expect(await s.claimJob('r3', 302, 500)).toMatchObject({ id: j.id });
      // Failing needs the runner that holds the job.
      expect(await s.transitionJob(j.id, ['running'], 'failed', { runner: 'r2', event: event(j.id, 'no') })).toBe(false);
      expect(await s.transitionJob(j.id, ['running'], 'cancelled', { finishedAt: 9, event: event(j.id, 'cancelled') })).toBe(true);
      expect(await s.checkpoint(j.id)).toBeUndefined();
      expect(await s.saveCheckpoint(j.id, 9, new Uint8Array([9]), 3)).toBe(false);
      expect(await s.checkpoint(j.id)).toBeUndefined();
    });

    it('completes a job once: model, adapter, status and usage together; names unique', async () => {
      const s = f.store;
      const j = job(a.account, a.key);
      await s.createJob(j, event(j.id, 'created'));
      expect(await s.claimJob('r1', 1, 1000)).toMatchObject({ id: j.id });
      await s.saveCheckpoint(j.id, 3, new Uint8Array([3]), 1);
      const model = `ft:svc-chat:acct-${a.account}:bot`;
      const completion = (runner: string, modelName: string) => ({
        jobId: j.id,
        runner,
        model: { name: modelName, accountId: a.account, specialist: 'chat', jobId: j.id, createdAt: 7 },
        adapter: new Uint8Array([1, 2, 3, 4]),
        trainedTokens: 500,
        periodStart: 0,
        finishedAt: 7,
        event: event(j.id, 'done'),
      });
      expect(await s.completeJob(completion('someone-else', model))).toBe('not-running');
      expect(await s.completeJob(completion('r1', model))).toBe('done');
      expect(await s.completeJob(completion('r1', `${model}-2`))).toBe('not-running');
      expect(await s.job(a.account, j.id)).toMatchObject({ status: 'succeeded', fineTunedModel: model, trainedTokens: 500, finishedAt: 7 });
      expect(await s.checkpoint(j.id)).toBeUndefined();
      expect(await s.fineTunedModel(a.account, model)).toEqual({ name: model, accountId: a.account, specialist: 'chat', jobId: j.id, bytes: 4, createdAt: 7 });
      expect(await s.fineTunedModel(b.account, model)).toBeUndefined();
      expect([...((await s.adapter(a.account, model)) ?? [])]).toEqual([1, 2, 3, 4]);
      expect(await s.adapter(b.account, model)).toBeUndefined();
      expect((await s.listFineTunedModels(a.account)).map((m) => m.name)).toEqual([model]);
      expect(await s.trainingUsage(a.key, 0)).toEqual({ trainedTokens: 500, jobs: 1 });
      expect(await s.trainingUsage(b.key, 0)).toEqual({ trainedTokens: 0, jobs: 0 });
      expect(await s.deleteFineTunedModel(b.account, model)).toBe(false);

      // Another job cannot take the name: the runner is told to pick another, and nothing else changed.
      const k = job(a.account, a.key);
      await s.createJob(k, event(k.id, 'created'));
      expect(await s.claimJob('r1', 2, 1000)).toMatchObject({ id: k.id });
      expect(await s.completeJob({ ...completion('r1', model), jobId: k.id, model: { ...completion('r1', model).model, jobId: k.id } })).toBe('name-taken');
      expect(await s.job(a.account, k.id)).toMatchObject({ status: 'running', fineTunedModel: null });
      expect(await s.trainingUsage(a.key, 0)).toEqual({ trainedTokens: 500, jobs: 1 });
      // Deleted: the model and adapter go; the job and the counted tokens stay.
      expect(await s.deleteFineTunedModel(a.account, model)).toBe(true);
      expect(await s.fineTunedModel(a.account, model)).toBeUndefined();
      expect(await s.adapter(a.account, model)).toBeUndefined();
      expect(await s.job(a.account, j.id)).toMatchObject({ status: 'succeeded', fineTunedModel: model });
      expect(await s.trainingUsage(a.key, 0)).toEqual({ trainedTokens: 500, jobs: 1 });
      expect(await s.deleteFineTunedModel(a.account, model)).toBe(false);
    });
  });
}

suite('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-ft-store-'));
  dirs.push(dir);
  const o = openSqliteStore(dir, plans);
  opened.push(o);
  return { store: o.store.fineTuning!, admin: o.admin };
});

describe.skipIf(!postgresAvailable)('on PostgreSQL', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    for (const o of opened.splice(0)) await o.close();
    await server?.close();
  });
  suite('PostgreSQL', async () => {
    const o = await openStore({ url: await server.createDatabase() }, plans);
    opened.push(o);
    return { store: o.store.fineTuning!, admin: o.admin };
  });
});
