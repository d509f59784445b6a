/** The adapter cache: lazy loads (one per name however many ask at once), LRU unloads, never an adapter in use; and how a request holds one. */
import { describe, expect, it } from 'vitest';
import { EngineInputError } from '../../engine/types.ts';
import type { Caller } from '../../protocol/access.ts';
import type { ServiceParts } from '../../protocol/context.ts';
import { AdapterCache } from '../../protocol/fine-tuning/adapter-cache.ts';
import { withAdapter } from '../../protocol/fine-tuning/serving.ts';
import type { FineTuningStore } from '../../protocol/fine-tuning/records.ts';
import { StandInTuner } from './stand-in-tuner.ts';

function storeWith(names: string[]): FineTuningStore & { reads: number } {
  const s = {
    reads: 0,
    adapter(accountId: number, name: string) {
      s.reads++;
      return accountId === 1 && names.includes(name) ? new TextEncoder().encode(name) : undefined;
    },
  };
  return s as unknown as FineTuningStore & { reads: number };
}

describe('the adapter cache', () => {
  it('loads on first use, once for requests that arrive together, and only for the owning account', async () => {
    const tuner = new StandInTuner();
    const cache = new AdapterCache(storeWith(['a']), async () => tuner, 2);
    const [x, y] = await Promise.all([cache.acquire(1, 'a'), cache.acquire(1, 'a')]);
    expect(x!.id).toBe(y!.id);
    expect(tuner.loaded.size).toBe(1);
    expect(await cache.acquire(2, 'a')).toBeUndefined();
    expect(await cache.acquire(1, 'nope')).toBeUndefined();
  });

  it('unloads the least recently used beyond capacity, but never one in use', async () => {
    const tuner = new StandInTuner();
    const cache = new AdapterCache(storeWith(['a', 'b', 'c', 'd']), async () => tuner, 2);
    const a = (await cache.acquire(1, 'a'))!;
    (await cache.acquire(1, 'b'))!.release();
    (await cache.acquire(1, 'c'))!.release();
    // a is in use: b (least recently used of the rest) goes.
    await new Promise((r) => setTimeout(r, 0));
    expect([...tuner.loaded.values()].map((x) => x.name).sort()).toEqual(['a', 'c']);
    const d = (await cache.acquire(1, 'd'))!;
    await new Promise((r) => setTimeout(r, 0));
    expect([...tuner.loaded.values()].map((x) => x.name).sort()).toEqual(['a', 'd']);
    a.release();
    a.release();
    d.release();
    expect(cache.size).toBe(2);
    // c was unloaded: using it again loads it again.
    const c = (await cache.acquire(1, 'c'))!;
    expect(tuner.loaded.get(c.id)?.name).toBe('c');
    c.release();
  });

  it('unloads a deleted model at once, or when the last request using it ends', async () => {
    const tuner = new StandInTuner();
    const cache = new AdapterCache(storeWith(['a', 'b']), async () => tuner, 8);
    (await cache.acquire(1, 'a'))!.release();
    const b = (await cache.acquire(1, 'b'))!;
    cache.forget(1, 'a');
    cache.forget(1, 'b');
    await new Promise((r) => setTimeout(r, 0));
    expect([...tuner.loaded.values()].map((x) => x.name)).toEqual(['b']);
    b.release();
    await new Promise((r) => setTimeout(r, 0));
    expect(tuner.loaded.size).toBe(0);
    expect(cache.size).toBe(0);
  });

  it('forgets a failed load, so the next request tries again', async () => {
    const tuner = new StandInTuner();
    let fail = true;
    const flaky = Object.assign(Object.create(tuner) as StandInTuner, {
      loadAdapter: (bytes: Uint8Array, name: string) => (fail ? Promise.reject(new Error('device lost')) : tuner.loadAdapter(bytes, name)),
    });
    const cache = new AdapterCache(storeWith(['a']), async () => flaky, 2);
    await expect(cache.acquire(1, 'a')).rejects.toThrow('device lost');
    expect(cache.size).toBe(0);
    fail = false;
    expect((await cache.acquire(1, 'a'))!.id).toMatch(/^adapter-/);
  });
});

describe('serving a fine-tuned model', () => {
  const model = { name: 'ft:svc-chat:acct-1:a', accountId: 1, specialist: 'chat', jobId: 'ftjob-x', bytes: 1, createdAt: 0 };
  const caller = { account: { id: 1 } } as unknown as Caller;

  it('holds the adapter until the ticket is released, and releases the ticket on a refusal', async () => {
    const tuner = new StandInTuner();
    const adapters = new AdapterCache(storeWith(['ft:svc-chat:acct-1:a', 'b']), async () => tuner, 0);
    const svc = { fineTuning: { adapters } } as unknown as ServiceParts;
    let released = 0;
    const held = await withAdapter(svc, caller, model, { release: () => released++ }, 'model');
    expect(tuner.loaded.get(held.adapter)?.name).toBe(model.name);
    held.ticket.release();
    expect(released).toBe(1);
    await new Promise((r) => setTimeout(r, 0));
    // Capacity 0: unloaded as soon as nobody holds it.
    expect(tuner.unloaded).toEqual([held.adapter]);

    const refusing = Object.assign(Object.create(tuner) as StandInTuner, { loadAdapter: () => Promise.reject(new EngineInputError('adapter is for architecture gpt2, the model is llama', 'adapter')) });
    const svc2 = { fineTuning: { adapters: new AdapterCache(storeWith([model.name]), async () => refusing, 2) } } as unknown as ServiceParts;
    const e = await withAdapter(svc2, caller, model, { release: () => released++ }, 'model').catch((x: unknown) => x);
    expect(e).toMatchObject({ status: 400, code: 'model_incompatible', param: 'model' });
    expect((e as Error).message).toMatch(/architecture gpt2/);
    expect(released).toBe(2);
    const none = await withAdapter({} as ServiceParts, caller, model, { release: () => released++ }, 'model').catch((x: unknown) => x);
    expect(none).toMatchObject({ status: 503, code: 'fine_tuned_model_unavailable' });
    expect(released).toBe(3);
  });
});
