/**
 * A job survives its server: stopped mid-training, the job stays `running` with its last checkpoint, and
 * a new server on the same SQLite file resumes it from that checkpoint (not from step 0) to succeeded.
 * Also: a cancel from another replica, and training yields to inference, but only up to its cap.
 * Trained by the real tuner on the test engine, watched through a recording spy (real-tuner.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { DB_FILE } from '../../adapters/sqlite/db.ts';
import { ManualClock } from '../../protocol/clock.ts';
import { startServer } from '../http/helpers/harness.ts';
import { eventMessages, trainingJsonl, upload, waitFor, waitForStatus } from './helpers.ts';
import { realTuner } from './real-tuner.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'svc-ft-restart-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('restart', () => {
  it('resumes a running job from its last checkpoint on a new server', async () => {
    const clock = new ManualClock();
    const first = await realTuner();
    const a = await startServer({ dataDir, clock, fineTuning: { tuner: first, runner: { pollMs: 50, checkpointEvery: 3 } } });
    const key = a.key('scale', { paid: true });
    let client = new OpenAI({ baseURL: a.baseURL, apiKey: key, maxRetries: 0 });
    const f = await upload(client, trainingJsonl(8));
    const job = await client.fineTuning.jobs.create({ model: 'svc-classify', training_file: f.id, suffix: 'resumed', hyperparameters: { n_epochs: 5, batch_size: 1 } });
    await waitFor('a checkpoint', async () => (await eventMessages(client, job.id)).includes('Checkpoint saved at step 6'));
    await a.close();

    // Stopped mid-run: the first trainer was aborted there, short of its 40 steps.
    expect(first.runs).toHaveLength(1);
    expect(first.runs[0].error).toMatchObject({ name: 'AbortError' });
    const stoppedAt = first.runs[0].steps.at(-1)!.step;
    expect(stoppedAt).toBeGreaterThanOrEqual(6);
    expect(stoppedAt).toBeLessThan(40);

    const second = await realTuner();
    const b = await startServer({ dataDir, clock, fineTuning: { tuner: second, runner: { pollMs: 50, checkpointEvery: 3 } } });
    try {
      client = new OpenAI({ baseURL: b.baseURL, apiKey: key, maxRetries: 0 });
      const done = await waitForStatus(client, job.id, ['succeeded', 'failed']);
      expect(done.status).toBe('succeeded');
      expect(done.fine_tuned_model).toMatch(/^ft:svc-classify:acct-\d+:resumed$/);
      // The first server saved a checkpoint on its way out, at the step it stopped; the second trainer
      // was given it and went on from the step after, to the same 40 steps.
      expect(first.runs).toHaveLength(1);
      expect(second.runs).toHaveLength(1);
      const resumed = second.runs[0];
      expect(resumed.resumed).toBe(true);
      expect(resumed.steps[0].step).toBe(stoppedAt + 1);
      expect(resumed.steps.at(-1)).toMatchObject({ step: 40, totalSteps: 40 });
      expect(resumed.output!.steps).toBe(40);
      // The trainer's result covers the whole run, the steps before the restart included.
      expect(resumed.output!.trainLoss.slice(0, stoppedAt)).toEqual(first.runs[0].steps.map((x) => x.loss));
      expect(done.trained_tokens).toBe(resumed.output!.trainedTokens);
      expect(done.trained_tokens).toBe(5 * second.assistantTokens(resumed.input.train));
      const messages = await eventMessages(client, job.id);
      expect(messages).toContain(`Resuming fine-tuning from the checkpoint at step ${stoppedAt}`);
      expect(messages.filter((m) => m === 'Fine-tuning job started')).toHaveLength(1);
      expect(messages.at(-1)).toMatch(/successfully completed/);
      // The model's adapter loaded on the new server once the job succeeded.
      expect([...second.loaded.values()]).toEqual([done.fine_tuned_model]);
    } finally {
      await b.close();
    }
  });
});

describe('a checkpoint that cannot be used', () => {
  it('starts the job over, saying why, instead of failing it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-ft-badckpt-'));
    try {
      const first = await realTuner();
      const a = await startServer({ dataDir: dir, fineTuning: { tuner: first, runner: { pollMs: 50, checkpointEvery: 2 } } });
      const key = a.key('scale', { paid: true });
      let client = new OpenAI({ baseURL: a.baseURL, apiKey: key, maxRetries: 0 });
      const f = await upload(client, trainingJsonl(4));
      const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id, hyperparameters: { n_epochs: 10, batch_size: 1 } });
      await waitFor('a checkpoint', async () => (await eventMessages(client, job.id)).includes('Checkpoint saved at step 4'));
      await a.close();
      // What an older version or another setup left: bytes that are not this run's checkpoint.
      const db = new Database(join(dir, DB_FILE));
      const changed = db.prepare("UPDATE ft_checkpoints SET state = ? WHERE job_id = ?").run(Buffer.from('not a checkpoint'), job.id).changes;
      db.close();
      expect(changed).toBe(1);

      const second = await realTuner();
      const b = await startServer({ dataDir: dir, fineTuning: { tuner: second, runner: { pollMs: 50, checkpointEvery: 2 } } });
      try {
        client = new OpenAI({ baseURL: b.baseURL, apiKey: key, maxRetries: 0 });
        const done = await waitForStatus(client, job.id, ['succeeded', 'failed']);
        expect(done.status).toBe('succeeded');
        const messages = await eventMessages(client, job.id);
        expect(messages.some((m) => /^The checkpoint at step \d+ cannot be used \(not a fine-tuning checkpoint.*\); training starts over$/.test(m))).toBe(true);
        // Two runs on the second server: the refused resume, then the whole job from step 1.
        expect(second.runs).toHaveLength(2);
        expect(second.runs[0].error).toMatchObject({ name: 'CheckpointMismatchError' });
        expect(second.runs[1].steps[0].step).toBe(1);
        expect(second.runs[1].output!.steps).toBe(40);
      } finally {
        await b.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('replicas', () => {
  it('a job cancelled on another replica stops here at the next lease renewal', async () => {
    const clock = new ManualClock();
    const tuner = await realTuner();
    const s = await startServer({ clock, fineTuning: { tuner, runner: { pollMs: 50, leaseMs: 60_000 } } });
    try {
      const client = new OpenAI({ baseURL: s.baseURL, apiKey: s.key('scale', { paid: true }), maxRetries: 0 });
      const f = await upload(client, trainingJsonl(8));
      const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id, hyperparameters: { n_epochs: 20, batch_size: 1 } });
      await waitFor('the first step', async () => tuner.runs[0]?.steps.length > 0);
      // Another replica's cancel reaches this one only through the store.
      const cancel = { jobId: job.id, createdAt: clock.now(), level: 'info' as const, message: 'Fine-tuning job cancelled', type: 'message' as const, data: {} };
      expect(await s.app.store.fineTuning!.transitionJob(job.id, ['running'], 'cancelled', { finishedAt: clock.now(), event: cancel })).toBe(true);
      await new Promise((r) => setTimeout(r, 200));
      // Still training here until the lease is renewed (160 steps take far longer than this).
      expect(s.app.service.fineTuningRunner!.currentJob).toBe(job.id);
      const before = tuner.runs[0].steps.length;
      await waitFor('another step', async () => tuner.runs[0].steps.length > before);
      clock.advance(10_001);
      await waitFor('the runner to let go', async () => s.app.service.fineTuningRunner!.currentJob === undefined, 10_000);
      const after = await client.fineTuning.jobs.retrieve(job.id);
      expect([after.status, after.fine_tuned_model]).toEqual(['cancelled', null]);
      // The trainer itself was stopped, far short of its end.
      expect(tuner.runs[0].error).toMatchObject({ name: 'AbortError' });
      expect(tuner.runs[0].steps.at(-1)!.step).toBeLessThan(160);
      expect(tuner.loaded.size).toBe(0);
    } finally {
      await s.close();
    }
  });
});

describe('yielding to inference', () => {
  it('waits while inference is busy, at most maxYieldMs per step', async () => {
    const tuner = await realTuner();
    // FAULT INJECTION: inference reported busy all along (the spy's override; the engine itself is idle).
    tuner.forceBusy = true;
    const s = await startServer({ fineTuning: { tuner, runner: { pollMs: 30, maxYieldMs: 150 } } });
    try {
      const client = new OpenAI({ baseURL: s.baseURL, apiKey: s.key('scale', { paid: true }), maxRetries: 0 });
      const f = await upload(client, trainingJsonl(4));
      const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id, hyperparameters: { n_epochs: 1, batch_size: 1 } });
      // Busy all along: before each of the 4 steps the runner waited its cap, and training still finished.
      const done = await waitForStatus(client, job.id, ['succeeded', 'failed']);
      expect(done.status).toBe('succeeded');
      const run = tuner.runs[0];
      expect(run.steps.map((x) => x.step)).toEqual([1, 2, 3, 4]);
      expect(run.waits).toHaveLength(4);
      for (const w of run.waits) expect(w).toBeGreaterThanOrEqual(140);
    } finally {
      await s.close();
    }
  });

  it('goes on as soon as inference is idle, not at the cap', async () => {
    const tuner = await realTuner();
    tuner.forceBusy = true; // FAULT INJECTION, as above, until released below
    const s = await startServer({ fineTuning: { tuner, runner: { pollMs: 30, maxYieldMs: 60_000 } } });
    try {
      const client = new OpenAI({ baseURL: s.baseURL, apiKey: s.key('scale', { paid: true }), maxRetries: 0 });
      const f = await upload(client, trainingJsonl(4));
      const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id, hyperparameters: { n_epochs: 1, batch_size: 4 } });
      await waitFor('the trainer to wait before its first step', async () => tuner.runs[0]?.waiting);
      await new Promise((r) => setTimeout(r, 300));
      expect([tuner.runs[0].waiting, tuner.runs[0].steps.length]).toEqual([true, 0]);
      tuner.forceBusy = false;
      const done = await waitForStatus(client, job.id, ['succeeded', 'failed'], 30_000);
      expect(done.status).toBe('succeeded');
      // Held while busy, let go once idle: far short of the 60 s cap.
      expect(tuner.runs[0].waits[0]).toBeGreaterThanOrEqual(300);
      expect(tuner.runs[0].waits[0]).toBeLessThan(20_000);
    } finally {
      await s.close();
    }
  });
});
