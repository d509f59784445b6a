/**
 * Fine-tuning through the in-process client (no HTTP): upload, job to succeeded, events paged, the
 * fine-tuned model listed and answering with its adapter, and the same refusals as over HTTP. Trained by
 * the real tuner on the test engine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, ServiceError, type SvcClient } from '../../adapters/in-process/client.ts';
import { startServer, type Harness } from '../http/helpers/harness.ts';
import { testEngine } from '../helpers/engine.ts';
import { realTuner, type RecordingTuner } from './real-tuner.ts';
import { trainingJsonl, waitFor } from './helpers.ts';

let h: Harness;
let client: SvcClient;
let tuner: RecordingTuner;
beforeAll(async () => {
  tuner = await realTuner();
  h = await startServer({ engine: () => testEngine(), fineTuning: { tuner, runner: { pollMs: 30 } } });
  client = createClient(h.app.service, { apiKey: h.key('scale', { paid: true }) });
});
afterAll(() => h.close());

async function refusal(p: Promise<unknown>): Promise<ServiceError> {
  const e = await p.then(() => undefined, (x: unknown) => x);
  expect(e).toBeInstanceOf(ServiceError);
  return e as ServiceError;
}

describe('fine-tuning in process', () => {
  it('uploads, trains and lists like the HTTP API', async () => {
    const file = await client.files.create({ file: trainingJsonl(4), filename: 'labels.jsonl', purpose: 'fine-tune' });
    expect(file).toMatchObject({ object: 'file', filename: 'labels.jsonl', purpose: 'fine-tune' });
    expect((await client.files.list({ limit: 1 })).data.map((f) => f.id)).toEqual([file.id]);
    const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: file.id, suffix: 'inproc', hyperparameters: { n_epochs: 1 } });
    const done = await waitFor('succeeded', async () => {
      const j = await client.fineTuning.jobs.retrieve(job.id as string);
      return j.status === 'succeeded' && j;
    });
    expect(done.fine_tuned_model).toMatch(/^ft:svc-chat:acct-\d+:inproc$/);
    // 4 conversations, 1 epoch, batch 1 (auto for 4): four real optimizer steps.
    expect(tuner.runs[0].steps.map((s) => s.step)).toEqual([1, 2, 3, 4]);
    expect(done.trained_tokens).toBe(tuner.runs[0].output!.trainedTokens);
    const page = await client.fineTuning.jobs.listEvents(job.id as string, { limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.has_more).toBe(true);
    expect((await client.models.list()).data.map((m) => m.id)).toContain(done.fine_tuned_model);
    const reply = await client.chat.completions.create({ model: done.fine_tuned_model as string, messages: [{ role: 'user', content: 'Lily saw a cat.' }], max_tokens: 4, temperature: 0 });
    expect(reply.model).toBe(done.fine_tuned_model);
    expect([...tuner.loaded.values()]).toEqual([done.fine_tuned_model]);
    expect(await client.models.delete(done.fine_tuned_model as string)).toMatchObject({ deleted: true });
    expect((await client.models.list()).data.map((m) => m.id)).not.toContain(done.fine_tuned_model);
  });

  it('refuses as HTTP does', async () => {
    expect((await refusal(client.files.create({ file: '{"messages": [', purpose: 'fine-tune' }))).code).toBe('invalid_training_file');
    expect((await refusal(client.files.create({ file: trainingJsonl(1), purpose: 'assistants' }))).param).toBe('purpose');
    expect((await refusal(client.files.create({ file: new Uint8Array(16 * 1024 * 1024 + 1), purpose: 'fine-tune' }))).status).toBe(413);
    expect((await refusal(client.fineTuning.jobs.list({ limit: 1000 }))).param).toBe('limit');
    const solo = createClient(h.app.service, { apiKey: h.key('solo', { paid: true }) });
    expect((await refusal(solo.fineTuning.jobs.list())).status).toBe(403);
  });
});
