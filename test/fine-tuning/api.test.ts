/**
 * The fine-tuning API through the official openai client against a real server on SQLite: files,
 * jobs to succeeded with their events, cancel, plans without the feature, fine-tuned models served to
 * their account only, training tokens in /v1/usage. Trained by the real tuner on the test engine, watched
 * through a recording spy (real-tuner.ts); the engine serving requests is watched too, so the tests see
 * which adapter each request ran with.
 */
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { watched, type Watched } from '../http/helpers/watched.ts';
import { bearer, postJson, startServer, type Harness } from '../http/helpers/harness.ts';
import { connectWs, WsRequestError } from '../../adapters/ws/client.ts';
import { realTuner, type RecordingTuner } from './real-tuner.ts';
import { caught, eventMessages, trainingJsonl, upload, waitFor, waitForStatus } from './helpers.ts';

let h: Harness;
let tuner: RecordingTuner;
let engine: Watched | undefined;
let scale: OpenAI;
let scaleKey: string;
let other: OpenAI;
let solo: OpenAI;
beforeAll(async () => {
  tuner = await realTuner();
  h = await startServer({
    engine: async () => (engine ??= watched(await testEngine())),
    fineTuning: { tuner, runner: { pollMs: 50, checkpointEvery: 2, progressEventMs: 0 } },
  });
  scaleKey = h.key('scale', { paid: true });
  scale = new OpenAI({ baseURL: h.baseURL, apiKey: scaleKey, maxRetries: 0 });
  other = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('enterprise', { paid: true, rpm: 100, monthly: 1000 }), maxRetries: 0 });
  solo = new OpenAI({ baseURL: h.baseURL, apiKey: h.key('solo', { paid: true }), maxRetries: 0 });
});
afterAll(() => h.close());

describe('files', () => {
  it('uploads a training file, lists and retrieves it for its account only', async () => {
    const f = await upload(scale, trainingJsonl(6), 'labels.jsonl');
    expect(f).toMatchObject({ object: 'file', purpose: 'fine-tune', filename: 'labels.jsonl', bytes: Buffer.byteLength(trainingJsonl(6)), status: 'processed' });
    expect(f.id).toMatch(/^file-[A-Za-z0-9]{24}$/);
    expect((await scale.files.retrieve(f.id)).id).toBe(f.id);
    const ids: string[] = [];
    for await (const x of scale.files.list()) ids.push(x.id);
    expect(ids).toContain(f.id);

    const e = await caught(other.files.retrieve(f.id));
    expect(e.status).toBe(404);
    expect(e.code).toBe('file_not_found');
    const listed: string[] = [];
    for await (const x of other.files.list()) listed.push(x.id);
    expect(listed).not.toContain(f.id);
  });

  it('refuses a bad JSONL file with every bad line named, and stores nothing', async () => {
    const before = (await scale.files.list()).data.length;
    const text = [
      JSON.stringify({ messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Label: hi' }] }),
      '{"messages": [',
      JSON.stringify({ messages: [{ role: 'user', content: 'no answer' }] }),
      JSON.stringify({ messages: [{ role: 'robot', content: 'x' }] }),
    ].join('\n');
    const e = await caught(upload(scale, text));
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_training_file');
    expect(e.param).toBe('file');
    expect(e.message).toMatch(/line 2: not valid JSON/);
    expect(e.message).toMatch(/line 3: messages: no assistant message/);
    expect(e.message).toMatch(/line 4: messages\.0\.role/);
    expect(e.message).not.toMatch(/line 1:/);
    expect((await scale.files.list()).data.length).toBe(before);
  });

  it('takes only purpose fine-tune, and deletes a file', async () => {
    const { toFile } = await import('openai');
    const e = await caught(scale.files.create({ file: await toFile(Buffer.from(trainingJsonl(2)), 'x.jsonl'), purpose: 'batch' }));
    expect(e.status).toBe(400);
    expect(e.param).toBe('purpose');
    const f = await upload(scale, trainingJsonl(2));
    expect(await scale.files.delete(f.id)).toEqual({ id: f.id, object: 'file', deleted: true });
    expect((await caught(scale.files.retrieve(f.id))).status).toBe(404);
  });

  it('refuses a body that is not multipart, and an upload over the size limit', async () => {
    const r = await postJson(`${h.baseURL}/files`, { purpose: 'fine-tune' }, bearer(scaleKey));
    expect(r.status).toBe(400);
    expect((await r.json()).error.code).toBe('unsupported_content_type');
    const small = await startServer({ engine: async () => (engine ??= watched(await testEngine())), maxUploadBytes: 1000 });
    try {
      const big = new OpenAI({ baseURL: small.baseURL, apiKey: small.key('scale', { paid: true }), maxRetries: 0 });
      const e = await caught(upload(big, trainingJsonl(40)));
      expect(e.status).toBe(413);
    } finally {
      await small.close();
    }
  });
});

describe('plans without fine-tuning', () => {
  it('get 403 permission_error on every files and fine-tuning endpoint', async () => {
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['files.create', () => upload(solo, trainingJsonl(2))],
      ['files.list', () => solo.files.list()],
      ['files.retrieve', () => solo.files.retrieve('file-x')],
      ['files.delete', () => solo.files.delete('file-x')],
      ['jobs.create', () => solo.fineTuning.jobs.create({ model: 'svc-chat', training_file: 'file-x' })],
      ['jobs.list', () => solo.fineTuning.jobs.list()],
      ['jobs.retrieve', () => solo.fineTuning.jobs.retrieve('ftjob-x')],
      ['jobs.listEvents', () => solo.fineTuning.jobs.listEvents('ftjob-x')],
      ['jobs.cancel', () => solo.fineTuning.jobs.cancel('ftjob-x')],
    ];
    for (const [name, call] of calls) {
      const e = await caught(call());
      expect([name, e.status, e.type, e.code]).toEqual([name, 403, 'permission_error', 'feature_not_in_plan']);
      expect(e.message).toContain('Solo');
    }
  });
});

describe('a job', () => {
  let job: OpenAI.FineTuning.FineTuningJob;
  let fileId: string;

  it('is created in validating_files with resolved hyperparameters', async () => {
    fileId = (await upload(scale, trainingJsonl(6))).id;
    job = await scale.fineTuning.jobs.create({ model: 'svc-chat', training_file: fileId, suffix: 'Label Bot!', seed: 7, hyperparameters: { n_epochs: 2, batch_size: 2 } });
    expect(job).toMatchObject({ object: 'fine_tuning.job', model: 'svc-chat', training_file: fileId, validation_file: null, seed: 7, fine_tuned_model: null, trained_tokens: null, error: null });
    expect(job.id).toMatch(/^ftjob-[A-Za-z0-9]{24}$/);
    expect(job.status).toBe('validating_files');
    expect(job.hyperparameters).toMatchObject({ n_epochs: 2, batch_size: 2, learning_rate_multiplier: 1 });
  });

  it('runs to succeeded with step, checkpoint and completion events', async () => {
    const done = await waitForStatus(scale, job.id, ['succeeded', 'failed']);
    expect(done.status).toBe('succeeded');
    expect(done.fine_tuned_model).toMatch(/^ft:svc-chat:acct-\d+:label-bot$/);
    // The assistant tokens of every epoch, as the trainer counted them.
    const run = tuner.runs[0];
    expect(done.trained_tokens).toBe(run.output!.trainedTokens);
    expect(done.trained_tokens).toBe(2 * tuner.assistantTokens(run.input.train));
    expect(done.finished_at).toBeGreaterThanOrEqual(done.created_at);
    const messages = await eventMessages(scale, job.id);
    expect(messages[0]).toBe(`Created fine-tuning job: ${job.id}`);
    expect(messages).toContain('Files validated, moving job to queued state');
    expect(messages).toContain('Fine-tuning job started');
    expect(messages.some((m) => /^Step 1\/6: training loss=/.test(m))).toBe(true);
    expect(messages.some((m) => /^Step 6\/6: training loss=/.test(m))).toBe(true);
    expect(messages).toContain('Checkpoint saved at step 2');
    expect(messages.some((m) => /^Epoch 1 done: training loss=/.test(m))).toBe(true);
    expect(messages.at(-1)).toBe(`The job has successfully completed: new fine-tuned model ${done.fine_tuned_model}`);
    // Trained on what serving sends: the chat specialist's system prompt, then the conversation.
    const given = run.input;
    expect(given.train).toHaveLength(6);
    const chatPrompt = (JSON.parse(readFileSync(new URL('../../specialists/chat.json', import.meta.url), 'utf8')) as { systemPrompt: string }).systemPrompt;
    expect(given.train[0].messages[0]).toEqual({ role: 'system', content: chatPrompt });
    expect(given.train[0].messages.slice(1).map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(given.settings).toMatchObject({ epochs: 2, batchSize: 2, seed: 7, learningRate: 2e-4, lora: { rank: 8, alpha: 16 } });
    const metrics = (await scale.fineTuning.jobs.listEvents(job.id, { limit: 100 })).data.filter((e) => e.type === 'metrics' && /^Step/.test(e.message));
    expect(metrics[0].data).toMatchObject({ step: 6, total_steps: 6, train_loss: run.output!.trainLoss[5] });
    expect(run.steps.map((x) => x.step)).toEqual([1, 2, 3, 4, 5, 6]);
    job = done;
  });

  it('pages the job list and the events with after/limit', async () => {
    const second = await scale.fineTuning.jobs.create({ model: 'chat', training_file: fileId, suffix: 'label-bot', hyperparameters: { n_epochs: 1 } });
    const first = await scale.fineTuning.jobs.list({ limit: 1 });
    expect(first.data.map((j) => j.id)).toEqual([second.id]);
    expect(first.has_more).toBe(true);
    const next = await scale.fineTuning.jobs.list({ limit: 1, after: second.id });
    expect(next.data.map((j) => j.id)).toEqual([job.id]);
    const events = await scale.fineTuning.jobs.listEvents(job.id, { limit: 2 });
    expect(events.data).toHaveLength(2);
    expect(events.has_more).toBe(true);
    const more = await scale.fineTuning.jobs.listEvents(job.id, { limit: 2, after: events.data[1].id });
    expect(more.data[0].id).not.toBe(events.data[1].id);
    // The same suffix again: the name stays unique within the account.
    const done = await waitForStatus(scale, second.id, ['succeeded', 'failed']);
    expect(done.fine_tuned_model).toBe(`${job.fine_tuned_model}-2`);
  });

  it('is 404 for another account, and bad input is a 400 naming the parameter', async () => {
    expect((await caught(other.fineTuning.jobs.retrieve(job.id))).status).toBe(404);
    expect((await caught(other.fineTuning.jobs.listEvents(job.id))).status).toBe(404);
    expect((await caught(other.fineTuning.jobs.cancel(job.id))).status).toBe(404);
    const foreign = await caught(other.fineTuning.jobs.create({ model: 'svc-chat', training_file: fileId }));
    expect([foreign.status, foreign.param]).toEqual([400, 'training_file']);
    const model = await caught(scale.fineTuning.jobs.create({ model: 'gpt-9', training_file: fileId }));
    expect([model.status, model.code]).toEqual([404, 'model_not_found']);
    const epochs = await caught(scale.fineTuning.jobs.create({ model: 'svc-chat', training_file: fileId, hyperparameters: { n_epochs: 0 } }));
    expect([epochs.status, epochs.param]).toEqual([400, 'hyperparameters.n_epochs']);
    const finished = await caught(scale.fineTuning.jobs.cancel(job.id));
    expect([finished.status, finished.code]).toEqual([400, 'job_already_finished']);
  });

  it('gives a model listed for its account only, served with its adapter, 404 for others', async () => {
    const name = job.fine_tuned_model!;
    const mine = (await scale.models.list()).data.map((m) => m.id);
    expect(mine).toContain(name);
    expect(mine).toContain('svc-chat');
    expect((await scale.models.retrieve(name)).owned_by).toMatch(/^acct-\d+$/);
    expect((await other.models.list()).data.map((m) => m.id)).not.toContain(name);

    const r = await scale.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'Lily saw a cat.' }], max_tokens: 4, temperature: 0 });
    expect(r.model).toBe(name);
    const adapter = engine!.calls.at(-1)!;
    const id = (adapter as { adapter?: string }).adapter;
    expect(tuner.loaded.get(id!)).toBe(name);
    expect(tuner.engine.adapters().map((a) => a.name)).toContain(name);
    const base = await scale.chat.completions.create({ model: 'svc-chat', messages: [{ role: 'user', content: 'Lily saw a cat.' }], max_tokens: 4, temperature: 0 });
    expect(base.choices).toHaveLength(1);
    expect((engine!.calls.at(-1) as { adapter?: string }).adapter).toBeUndefined();

    const inferred = await postJson(`${h.baseURL}/infer`, { model: name, prompt: 'Lily saw a dog.', max_tokens: 4 }, bearer(scaleKey));
    expect(inferred.status).toBe(200);
    expect((await inferred.json()).specialist).toBe('chat');
    expect((engine!.calls.at(-1) as { adapter?: string }).adapter).toBe(id);

    for (const e of [
      await caught(other.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })),
      await caught(other.models.retrieve(name)),
      await caught(solo.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })),
    ]) {
      expect([e.status, e.code]).toEqual([404, 'model_not_found']);
    }
  });

  it('counts its training tokens apart in /v1/usage', async () => {
    const r = await fetch(`${h.baseURL}/usage`, { headers: bearer(scaleKey) });
    const body = await r.json();
    expect(body.fine_tuning).toEqual({ trained_tokens: expect.any(Number), jobs: 2 });
    const jobs = (await scale.fineTuning.jobs.list()).data;
    expect(body.fine_tuning.trained_tokens).toBe(jobs.reduce((n, j) => n + (j.trained_tokens ?? 0), 0));
    // Inference requests only in requests_used.
    expect(body.requests_used).toBe(3);
  });
});

describe('deleting a fine-tuned model', () => {
  it('removes it for its account (gone from the list, 404 after, adapter unloaded); others cannot', async () => {
    const name = `${(await scale.fineTuning.jobs.list()).data.find((j) => j.fine_tuned_model)!.fine_tuned_model!.replace(/-2$/, '')}-2`;
    // Loaded by a request first, so the delete has something to unload.
    await scale.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const loaded = [...tuner.loaded.entries()].find(([, a]) => a === name)![0];
    expect((await caught(other.models.delete(name))).status).toBe(404);
    const base = await caught(scale.models.delete('svc-chat'));
    expect([base.status, base.code]).toEqual([403, 'model_not_deletable']);
    expect(await scale.models.delete(name)).toEqual({ id: name, object: 'model', deleted: true });
    expect((await scale.models.list()).data.map((m) => m.id)).not.toContain(name);
    expect((await caught(scale.models.retrieve(name))).status).toBe(404);
    expect((await caught(scale.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }))).code).toBe('model_not_found');
    expect((await caught(scale.models.delete(name))).status).toBe(404);
    await tuner.settled();
    expect(tuner.unloaded).toContain(loaded);
  });
});

describe('a plan change', () => {
  it('away from fine-tuning hides the models and refuses them with 403; back again restores them', async () => {
    const { account } = h.admin.resolveKey(scaleKey);
    const name = (await scale.models.list()).data.find((m) => m.id.startsWith('ft:'))!.id;
    h.admin.setPlan(account.id, { plan: 'professional' }, h.clock.now());
    try {
      expect((await scale.models.list()).data.map((m) => m.id)).not.toContain(name);
      const e = await caught(scale.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }));
      expect([e.status, e.type, e.code, e.param]).toEqual([403, 'permission_error', 'feature_not_in_plan', 'model']);
      expect((await caught(scale.fineTuning.jobs.list())).status).toBe(403);
    } finally {
      h.admin.setPlan(account.id, { plan: 'scale' }, h.clock.now());
    }
    expect((await scale.models.list()).data.map((m) => m.id)).toContain(name);
  });
});

describe('limits', () => {
  it('at most 5 unfinished jobs per account: the 6th is a 429 until one ends', async () => {
    // No trainer on this server: jobs wait for a replica that has one.
    const s = await startServer({ engine: async () => (engine ??= watched(await testEngine())) });
    try {
      const c = new OpenAI({ baseURL: s.baseURL, apiKey: s.key('scale', { paid: true }), maxRetries: 0 });
      const f = await upload(c, trainingJsonl(2));
      const jobs = [];
      for (let i = 0; i < 5; i++) jobs.push(await c.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id }));
      const e = await caught(c.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id }));
      expect([e.status, e.code]).toEqual([429, 'too_many_fine_tuning_jobs']);
      await c.fineTuning.jobs.cancel(jobs[0].id);
      expect((await c.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id })).status).toBe('validating_files');
    } finally {
      await s.close();
    }
  });
});

describe('other transports', () => {
  it('reach the JSON endpoints over a WebSocket (pages included), and are told uploads need HTTP', async () => {
    const ws = await connectWs(h.url.replace(/^http/, 'ws') + '/v1/ws', scaleKey, WebSocket as never);
    try {
      const viaHttp = await scale.fineTuning.jobs.list({ limit: 1 });
      const page = (await ws.request('GET', '/v1/fine_tuning/jobs?limit=1')) as { data: { id: string }[]; has_more: boolean };
      expect(page.data.map((j) => j.id)).toEqual(viaHttp.data.map((j) => j.id));
      expect(page.has_more).toBe(viaHttp.has_more);
      const e = await ws.request('POST', '/v1/files', { purpose: 'fine-tune' }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(WsRequestError);
      expect((e as WsRequestError).status).toBe(400);
      expect((e as WsRequestError).message).toMatch(/multipart\/form-data .* over HTTP/);
    } finally {
      ws.close();
    }
  });
});

describe('cancel', () => {
  it('stops a running job: cancelled, no model, no usage', async () => {
    const slow = await realTuner();
    const s = await startServer({ engine: async () => (engine ??= watched(await testEngine())), fineTuning: { tuner: slow, runner: { pollMs: 50, checkpointEvery: 1 } } });
    try {
      const key = s.key('scale', { paid: true });
      const c = new OpenAI({ baseURL: s.baseURL, apiKey: key, maxRetries: 0 });
      const f = await upload(c, trainingJsonl(8));
      const job = await c.fineTuning.jobs.create({ model: 'svc-summarise', training_file: f.id, hyperparameters: { n_epochs: 10, batch_size: 1 } });
      await waitForStatus(c, job.id, ['running']);
      await waitFor('a few steps', async () => (await eventMessages(c, job.id)).some((m) => m.startsWith('Checkpoint saved at step 2')));
      const cancelled = await c.fineTuning.jobs.cancel(job.id);
      expect(cancelled.status).toBe('cancelled');
      await waitFor('the runner to stop', async () => s.app.service.fineTuningRunner!.currentJob === undefined);
      const after = await c.fineTuning.jobs.retrieve(job.id);
      expect([after.status, after.fine_tuned_model]).toEqual(['cancelled', null]);
      // The trainer itself was stopped, far short of its 80 steps.
      expect(slow.runs[0].error).toMatchObject({ name: 'AbortError' });
      expect(slow.runs[0].steps[0].totalSteps).toBe(80);
      expect(slow.runs[0].steps.at(-1)!.step).toBeLessThan(80);
      const messages = await eventMessages(c, job.id);
      expect(messages.at(-1)).toBe('Fine-tuning job cancelled');
      const usage = await (await fetch(`${s.baseURL}/usage`, { headers: bearer(key) })).json();
      expect(usage.fine_tuning).toEqual({ trained_tokens: 0, jobs: 0 });
      // A queued job cancels at once too.
      const queued = await c.fineTuning.jobs.create({ model: 'svc-chat', training_file: f.id });
      expect((await c.fineTuning.jobs.cancel(queued.id)).status).toBe('cancelled');
    } finally {
      await s.close();
    }
  });
});
