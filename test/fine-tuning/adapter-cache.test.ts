/**
 * The adapter cache: lazy loads (one per name however many ask at once), LRU unloads, never an adapter in
 * use; and how a request holds one. On the real engine, with an adapter the real tuner trained (every
 * name's bytes are that one file); a recording spy over the tuner tells which loads and unloads reached it.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LORA_TARGETS } from '../../engine/lora/adapter-file.ts';
import type { Caller } from '../../protocol/access.ts';
import type { ServiceParts } from '../../protocol/context.ts';
import { AdapterCache } from '../../protocol/fine-tuning/adapter-cache.ts';
import { withAdapter } from '../../protocol/fine-tuning/serving.ts';
import type { FineTuningStore } from '../../protocol/fine-tuning/records.ts';
import { realTuner, type RecordingTuner } from './real-tuner.ts';
import { trainingJsonl } from './helpers.ts';

/** An adapter file trained by the real tuner (a few steps on the test model). */
let adapter: Uint8Array;
beforeAll(async () => {
  const tuner = await realTuner();
  const train = trainingJsonl(4).split('\n').map((l) => JSON.parse(l));
  const out = await tuner.train({ train, settings: { lora: { rank: 4, alpha: 8, targets: LORA_TARGETS }, epochs: 1, batchSize: 2, learningRate: 1e-3, seed: 1 } }, {});
  expect(out.steps).toBe(2);
  adapter = out.adapter;
});

const tuners: RecordingTuner[] = [];
async function spy(): Promise<RecordingTuner> {
  const t = await realTuner();
  tuners.push(t);
  return t;
}
// The engine is shared by the whole file: what a test left loaded goes before the next.
afterEach(async () => {
  for (const t of tuners.splice(0)) for (const id of [...t.loaded.keys()]) await t.unloadAdapter(id);
});

function storeWith(names: string[]): FineTuningStore & { reads: number } {
  const s = {
    reads: 0,
    adapter(accountId: number, name: string) {
      s.reads++;
      return accountId === 1 && names.includes(name) ? adapter : undefined;
    },
  };
  return s as unknown as FineTuningStore & { reads: number };
}

/** The adapter with its general.architecture rewritten from "llama" to "mamba" (same length): a file for another model. */
function forAnotherArchitecture(bytes: Uint8Array): Uint8Array {
  const text = Buffer.from(bytes).toString('latin1');
  const key = text.indexOf('general.architecture');
  const at = text.indexOf('llama', key);
  expect([key >= 0, at - key]).toEqual([true, 'general.architecture'.length + 4 + 8]);
  const out = new Uint8Array(bytes);
  out.set(Buffer.from('mamba', 'latin1'), at);
  return out;
}

describe('the adapter cache', () => {
  it('loads on first use, once for requests that arrive together, and only for the owning account', async () => {
    const tuner = await spy();
    const cache = new AdapterCache(storeWith(['a']), async () => tuner, 2);
    const [x, y] = await Promise.all([cache.acquire(1, 'a'), cache.acquire(1, 'a')]);
    expect(x!.id).toBe(y!.id);
    expect([...tuner.loaded.values()]).toEqual(['a']);
    expect(tuner.engine.adapters().map((a) => a.id)).toContain(x!.id);
    expect(await cache.acquire(2, 'a')).toBeUndefined();
    expect(await cache.acquire(1, 'nope')).toBeUndefined();
  });

  it('unloads the least recently used beyond capacity, but never one in use', async () => {
    const tuner = await spy();
    const cache = new AdapterCache(storeWith(['a', 'b', 'c', 'd']), async () => tuner, 2);
    const a = (await cache.acquire(1, 'a'))!;
    (await cache.acquire(1, 'b'))!.release();
    (await cache.acquire(1, 'c'))!.release();
    // a is in use: b (least recently used of the rest) goes.
    await tuner.settled();
    expect([...tuner.loaded.values()].sort()).toEqual(['a', 'c']);
    const d = (await cache.acquire(1, 'd'))!;
    await tuner.settled();
    expect([...tuner.loaded.values()].sort()).toEqual(['a', 'd']);
    a.release();
    a.release();
    d.release();
    expect(cache.size).toBe(2);
    // c was unloaded: using it again loads it again.
    const c = (await cache.acquire(1, 'c'))!;
    expect(tuner.loaded.get(c.id)).toBe('c');
    c.release();
  });

  it('unloads a deleted model at once, or when the last request using it ends', async () => {
    const tuner = await spy();
    const cache = new AdapterCache(storeWith(['a', 'b']), async () => tuner, 8);
    (await cache.acquire(1, 'a'))!.release();
    const b = (await cache.acquire(1, 'b'))!;
    cache.forget(1, 'a');
    cache.forget(1, 'b');
    await tuner.settled();
    expect([...tuner.loaded.values()]).toEqual(['b']);
    b.release();
    await tuner.settled();
    expect(tuner.loaded.size).toBe(0);
    expect(tuner.engine.adapters().map((x) => x.id)).not.toContain(b.id);
    expect(cache.size).toBe(0);
  });

  it('forgets a failed load, so the next request tries again', async () => {
    const tuner = await spy();
    // Fault injection: the first load fails as a lost device would (the engine cannot be made to).
    tuner.failLoads = new Error('device lost');
    const cache = new AdapterCache(storeWith(['a']), async () => tuner, 2);
    await expect(cache.acquire(1, 'a')).rejects.toThrow('device lost');
    expect(cache.size).toBe(0);
    tuner.failLoads = undefined;
    const a = (await cache.acquire(1, 'a'))!;
    expect(tuner.loaded.get(a.id)).toBe('a');
    a.release();
  });
});

describe('serving a fine-tuned model', () => {
  const model = { name: 'ft:svc-chat:acct-1:a', accountId: 1, specialist: 'chat', jobId: 'ftjob-x', bytes: 1, createdAt: 0 };
  const caller = { account: { id: 1 } } as unknown as Caller;

  it('holds the adapter until the ticket is released, and releases the ticket on a refusal', async () => {
    const tuner = await spy();
    const adapters = new AdapterCache(storeWith(['ft:svc-chat:acct-1:a', 'b']), async () => tuner, 0);
    const svc = { fineTuning: { adapters } } as unknown as ServiceParts;
    let released = 0;
    const held = await withAdapter(svc, caller, model, { release: () => released++ }, 'model');
    expect(tuner.loaded.get(held.adapter)).toBe(model.name);
    held.ticket.release();
    expect(released).toBe(1);
    await tuner.settled();
    // Capacity 0: unloaded as soon as nobody holds it.
    expect(tuner.unloaded).toEqual([held.adapter]);

    // A file the engine refuses (made for another architecture): the request's error, not the server's.
    const foreign = forAnotherArchitecture(adapter);
    const store2 = { adapter: (accountId: number, name: string) => (accountId === 1 && name === model.name ? foreign : undefined) } as unknown as FineTuningStore;
    const svc2 = { fineTuning: { adapters: new AdapterCache(store2, async () => tuner, 2) } } as unknown as ServiceParts;
    const e = await withAdapter(svc2, caller, model, { release: () => released++ }, 'model').catch((x: unknown) => x);
    expect(e).toMatchObject({ status: 400, code: 'model_incompatible', param: 'model' });
    expect((e as Error).message).toMatch(/architecture "mamba", but the model is "llama"/);
    expect(released).toBe(2);
    const none = await withAdapter({} as ServiceParts, caller, model, { release: () => released++ }, 'model').catch((x: unknown) => x);
    expect(none).toMatchObject({ status: 503, code: 'fine_tuned_model_unavailable' });
    expect(released).toBe(3);
  });
});
