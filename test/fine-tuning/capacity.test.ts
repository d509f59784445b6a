/**
 * More fine-tuned models than the engine holds adapters: the least recently used idle adapter makes
 * room, and only when every loaded adapter is in use does a request get 503 adapter_capacity with
 * Retry-After (a busy server, not a bad request). Real trainer and engine, limited to one adapter.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type Harness } from '../http/helpers/harness.ts';
import { testEngine } from '../helpers/engine.ts';
import { caught, trainingJsonl, upload, waitForStatus } from './helpers.ts';
import { realTuner, type RecordingTuner } from './real-tuner.ts';

const ONE_ADAPTER = { maxAdapters: 1 };
let h: Harness;
let tuner: RecordingTuner;
let client: OpenAI;
const models: string[] = [];

beforeAll(async () => {
  tuner = await realTuner(ONE_ADAPTER);
  h = await startServer({ engine: () => testEngine('stories260K.gguf', ONE_ADAPTER), fineTuning: { tuner, runner: { pollMs: 50 } } });
  client = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('scale', { paid: true }), maxRetries: 0 });
  const f = await upload(client, trainingJsonl(4));
  for (const suffix of ['first', 'second']) {
    const job = await client.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id, suffix, hyperparameters: { n_epochs: 1, batch_size: 2 } });
    const done = await waitForStatus(client, job.id, ['succeeded', 'failed']);
    expect(done.status).toBe('succeeded');
    models.push(done.fine_tuned_model!);
  }
});
afterAll(() => h.close());

const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Lily saw a cat in the park.' }], max_tokens: 3, temperature: 0 });

describe('an engine that holds one adapter', () => {
  it('serves two fine-tuned models in turn, each load making room by unloading the idle one', async () => {
    for (const model of [models[0], models[1], models[0]]) {
      const r = await ask(model);
      expect(r.model).toBe(model);
      await tuner.settled();
      expect(tuner.engine.adapters().map((a) => a.name)).toEqual([model]);
    }
  });

  it('answers 503 adapter_capacity with Retry-After while the one slot is in use, and serves once it is free', async () => {
    const accountId = Number(/:acct-(\d+):/.exec(models[1])![1]);
    // A request holding the other model's adapter, as a long generation would.
    const lease = (await h.app.service.fineTuningAdapters!.acquire(accountId, models[1]))!;
    try {
      const e = await caught(ask(models[0]));
      expect([e.status, e.code, e.type]).toEqual([503, 'adapter_capacity', 'server_error']);
      expect(e.message).toMatch(/as many fine-tuned models at once as its engine holds \(1\)/);
      expect(e.headers?.get('retry-after')).toBe('2');
      // The base model is not affected.
      expect((await ask('svc-chat')).model).toBe('svc-chat');
    } finally {
      lease.release();
    }
    expect((await ask(models[0])).model).toBe(models[0]);
  });
});
