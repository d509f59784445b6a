/** The adapter cache: lazy loads (one per name however many ask at once), LRU unloads, never an adapter in use. */
import { describe, expect, it } from 'vitest';
import { AdapterCache } from '../../protocol/fine-tuning/adapter-cache.ts';
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
