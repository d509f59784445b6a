/**
 * REAL TRAINER, end to end: a Scale key uploads a JSONL file, starts a job, watches its events to
 * succeeded, and chats with its fine-tuned model, whose answers differ from the base model's as trained;
 * a Solo key gets 403. Trained on the WebGPU engine (protocol/fine-tuning/engine-tuner.ts over
 * engine/train/fine-tune.ts) with the tiny test model.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { engineTuner, type AdapterEngine, type TrainingFunctions } from '../../protocol/fine-tuning/engine-tuner.ts';
import { fineTune } from '../../engine/train/fine-tune.ts';
import { renderTrainingExamples } from '../../engine/train/render.ts';
import { testEngine } from '../helpers/engine.ts';
import { startServer, type Harness } from '../http/helpers/harness.ts';
import { caught, eventMessages, upload, waitFor, waitForStatus } from './helpers.ts';

const training: TrainingFunctions<AdapterEngine> = { fineTune: fineTune as TrainingFunctions<AdapterEngine>['fineTune'], renderTrainingExamples };

const animals = ['cat', 'dog', 'bird', 'fish', 'frog', 'bear', 'fox', 'owl', 'duck', 'cow', 'pig', 'hen'];
const jsonl = animals.map((a) => JSON.stringify({ messages: [{ role: 'user', content: `Tom saw a ${a} near the tree.` }, { role: 'assistant', content: `Label: ${a}` }] })).join('\n');

describe('fine-tuning on the real trainer', () => {
  let h: Harness;
  let engine: WebGpuEngine;
  beforeAll(async () => {
    engine = await testEngine();
    h = await startServer({ engine, fineTuning: { tuner: engineTuner(engine as unknown as AdapterEngine, training), runner: { pollMs: 100, checkpointEvery: 5 } } });
  });
  afterAll(() => h?.close());

  it('trains an adapter whose model answers as trained, for its account only', async () => {
    const client = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('scale', { paid: true }), maxRetries: 0 });
    const file = await upload(client, jsonl);
    const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: file.id, suffix: 'labels', seed: 1, hyperparameters: { n_epochs: 8, batch_size: 4, learning_rate_multiplier: 10 } });
    const done = await waitForStatus(client, job.id, ['succeeded', 'failed', 'cancelled'], 600_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('succeeded');
    expect(done.trained_tokens).toBeGreaterThan(0);
    const messages = await eventMessages(client, job.id);
    const losses = messages.map((m) => /^Step \d+\/\d+: training loss=([\d.]+)/.exec(m)?.[1]).filter(Boolean).map(Number);
    expect(losses.length).toBeGreaterThanOrEqual(2);
    expect(losses.at(-1)!).toBeLessThan(losses[0]);

    const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Tom saw a goat near the tree.' }], max_tokens: 8, temperature: 0 });
    const tuned = (await ask(done.fine_tuned_model!)).choices[0].message.content;
    const base = (await ask('svc-chat')).choices[0].message.content;
    expect(tuned).not.toBe(base);
    expect(tuned).toMatch(/Label/);

    const other = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('scale', { paid: true }), maxRetries: 0 });
    const foreign = await caught(other.chat.completions.create({ model: done.fine_tuned_model!, messages: [{ role: 'user', content: 'hi' }] }));
    expect([foreign.status, foreign.code]).toEqual([404, 'model_not_found']);
    const solo = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('solo', { paid: true }), maxRetries: 0 });
    expect((await caught(upload(solo, jsonl))).status).toBe(403);
  });
});

describe('a real training job across a restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-ft-real-restart-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('resumes from the checkpoint the stopped server saved, to succeeded', async () => {
    const engine = (await testEngine()) as unknown as AdapterEngine;
    const options = { engine: engine as never, dataDir, fineTuning: { tuner: engineTuner(engine, training), runner: { pollMs: 100, checkpointEvery: 4 } } };
    const a = await startServer(options);
    const key = a.key('scale', { paid: true });
    let client = new OpenAI({ baseURL: a.baseURL, apiKey: key, maxRetries: 0 });
    const file = await upload(client, jsonl);
    const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: file.id, suffix: 'resumed', seed: 3, hyperparameters: { n_epochs: 12, batch_size: 2 } });
    await waitFor('a checkpoint', async () => (await eventMessages(client, job.id)).some((m) => m.startsWith('Checkpoint saved')), 300_000);
    await a.close();
    // Stopped, not finished: a server without a trainer sees it still running.
    const peek = await startServer({ ...options, fineTuning: undefined });
    try {
      expect((await new OpenAI({ baseURL: peek.baseURL, apiKey: key, maxRetries: 0 }).fineTuning.jobs.retrieve(job.id)).status).toBe('running');
    } finally {
      await peek.close();
    }

    const b = await startServer(options);
    try {
      client = new OpenAI({ baseURL: b.baseURL, apiKey: key, maxRetries: 0 });
      const done = await waitForStatus(client, job.id, ['succeeded', 'failed'], 600_000);
      expect(done.error).toBeNull();
      expect(done.fine_tuned_model).toMatch(/:resumed$/);
      const messages = await eventMessages(client, job.id);
      const at = messages.findIndex((m) => m.startsWith('Resuming fine-tuning from the checkpoint at step '));
      const resumed = Number(/(\d+)$/.exec(messages[at])![1]);
      expect(resumed).toBeGreaterThan(0);
      // The new server went on from there: its first step is the one after the checkpoint.
      const next = messages.slice(at).find((m) => m.startsWith('Step '));
      expect(next).toMatch(new RegExp(`^Step ${resumed + 1}/`));
    } finally {
      await b.close();
    }
  });
});
