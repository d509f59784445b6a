/**
 * A job survives its server: stopped mid-training, the job stays `running` with its last checkpoint, and
 * a new server on the same SQLite file resumes it from that checkpoint (not from step 0) to succeeded.
 * Also: training yields to inference, but only up to its cap.
 *
 * STAND-IN TUNER (test/fine-tuning/stand-in-tuner.ts) until the trainer is merged: it resumes from the
 * checkpoint's step exactly as engine/train/loop.ts does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../protocol/clock.ts';
import { startServer } from '../http/helpers/harness.ts';
import { eventMessages, trainingJsonl, upload, waitFor, waitForStatus } from './helpers.ts';
import { StandInTuner } from './stand-in-tuner.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'svc-ft-restart-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const never = () => Promise.reject(new Error('no engine in this test'));

describe('restart', () => {
  it('resumes a running job from its last checkpoint on a new server', async () => {
    const clock = new ManualClock();
    const first = new StandInTuner(30);
    const a = await startServer({ dataDir, clock, engine: never, fineTuning: { tuner: first, runner: { pollMs: 50, checkpointEvery: 3 } } });
    const key = a.key('scale', { paid: true });
    let client = new OpenAI({ baseURL: a.baseURL, apiKey: key, maxRetries: 0 });
    const f = await upload(client, trainingJsonl(8));
    const job = await client.fineTuning.jobs.create({ model: 'svc-classify', training_file: f.id, suffix: 'resumed', hyperparameters: { n_epochs: 5, batch_size: 1 } });
    await waitFor('a checkpoint', async () => (await eventMessages(client, job.id)).includes('Checkpoint saved at step 6'));
    await a.close();

    const second = new StandInTuner(0);
    const b = await startServer({ dataDir, clock, engine: never, fineTuning: { tuner: second, runner: { pollMs: 50, checkpointEvery: 3 } } });
    try {
      client = new OpenAI({ baseURL: b.baseURL, apiKey: key, maxRetries: 0 });
      const done = await waitForStatus(client, job.id, ['succeeded', 'failed']);
      expect(done.status).toBe('succeeded');
      expect(done.fine_tuned_model).toMatch(/^ft:svc-classify:acct-\d+:resumed$/);
      // The first server saved one more checkpoint on its way out; the second started there.
      expect(first.runs).toHaveLength(1);
      expect(second.runs).toHaveLength(1);
      expect(second.runs[0].startStep).toBeGreaterThanOrEqual(6);
      expect(second.runs[0].startStep).toBeLessThan(40);
      const messages = await eventMessages(client, job.id);
      expect(messages).toContain(`Resuming fine-tuning from the checkpoint at step ${second.runs[0].startStep}`);
      expect(messages.filter((m) => m === 'Fine-tuning job started')).toHaveLength(1);
      expect(messages.at(-1)).toMatch(/successfully completed/);
      // The model's adapter loaded on the new server once the job succeeded.
      expect([...second.loaded.values()].map((x) => x.name)).toEqual([done.fine_tuned_model]);
    } finally {
      await b.close();
    }
  });
});

describe('replicas', () => {
  it('a job cancelled on another replica stops here at the next lease renewal', async () => {
    const clock = new ManualClock();
    const tuner = new StandInTuner(20);
    const s = await startServer({ clock, engine: never, fineTuning: { tuner, runner: { pollMs: 50, leaseMs: 60_000 } } });
    try {
      const client = new OpenAI({ baseURL: s.baseURL, apiKey: s.key('scale', { paid: true }), maxRetries: 0 });
      const f = await upload(client, trainingJsonl(8));
      const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id, hyperparameters: { n_epochs: 20, batch_size: 1 } });
      await waitForStatus(client, job.id, ['running']);
      // Another replica's cancel reaches this one only through the store.
      const cancel = { jobId: job.id, createdAt: clock.now(), level: 'info' as const, message: 'Fine-tuning job cancelled', type: 'message' as const, data: {} };
      expect(await s.app.store.fineTuning!.transitionJob(job.id, ['running'], 'cancelled', { finishedAt: clock.now(), event: cancel })).toBe(true);
      await new Promise((r) => setTimeout(r, 200));
      expect(s.app.service.fineTuningRunner!.currentJob).toBe(job.id);
      clock.advance(10_001);
      await waitFor('the runner to let go', async () => s.app.service.fineTuningRunner!.currentJob === undefined, 5000);
      const after = await client.fineTuning.jobs.retrieve(job.id);
      expect([after.status, after.fine_tuned_model]).toEqual(['cancelled', null]);
      expect(tuner.loaded.size).toBe(0);
    } finally {
      await s.close();
    }
  });
});

describe('yielding to inference', () => {
  it('waits while inference is busy, at most maxYieldMs per step', async () => {
    const tuner = new StandInTuner(0);
    tuner.busy = true;
    const s = await startServer({ engine: never, fineTuning: { tuner, runner: { pollMs: 30, maxYieldMs: 150 } } });
    try {
      const client = new OpenAI({ baseURL: s.baseURL, apiKey: s.key('scale', { paid: true }), maxRetries: 0 });
      const f = await upload(client, trainingJsonl(4));
      const started = performance.now();
      const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id, hyperparameters: { n_epochs: 1, batch_size: 1 } });
      await waitForStatus(client, job.id, ['running']);
      // Busy all along: each of the 4 steps waited its cap, and training still finished.
      const done = await waitForStatus(client, job.id, ['succeeded', 'failed']);
      expect(done.status).toBe('succeeded');
      expect(performance.now() - started).toBeGreaterThanOrEqual(4 * 150);

      tuner.busy = true;
      const quick = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id, hyperparameters: { n_epochs: 1, batch_size: 4 } });
      await waitForStatus(client, quick.id, ['running']);
      const freed = performance.now();
      tuner.busy = false;
      await waitForStatus(client, quick.id, ['succeeded']);
      expect(performance.now() - freed).toBeLessThan(2000);
    } finally {
      await s.close();
    }
  });
});
