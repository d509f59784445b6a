/**
 * Fine-tuned models' adapters on this replica's engine: loaded from the store on first use, kept while
 * generations use them, and the least recently used unloaded beyond `capacity` (an adapter in use is
 * never unloaded; the cache grows past capacity rather than wait). Keyed by account and name, so a
 * cached adapter is only ever handed to the account the store gave it to.
 */
import type { FineTuningStore } from './records.ts';
import type { Tuner } from './tuner.ts';
import { AdapterCapacityError } from '../../engine/types.ts';

export const DEFAULT_ADAPTER_CACHE = 8;

interface Entry {
  id: Promise<string>;
  refs: number;
  /** The model was deleted: unloaded as soon as nobody holds it. */
  forgotten?: boolean;
}

export interface AdapterLease {
  /** The engine's adapter id, for GenerateOptions.adapter. */
  id: string;
  /** Idempotent. */
  release(): void;
}

export class AdapterCache {
  /** Map order is recency: a use moves the entry to the end. */
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly store: FineTuningStore,
    private readonly tuner: () => Promise<Tuner>,
    readonly capacity = DEFAULT_ADAPTER_CACHE,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The adapter of the account's model `name`, loaded if needed; undefined when the account has no such model. */
  async acquire(accountId: number, name: string): Promise<AdapterLease | undefined> {
    const key = `${accountId}\n${name}`;
    let entry = this.entries.get(key);
    if (entry) this.entries.delete(key);
    else {
      const bytes = await this.store.adapter(accountId, name);
      if (!bytes) return undefined;
      // Another request may have started the load while the store answered.
      entry = this.entries.get(key);
      if (entry) this.entries.delete(key);
      else {
        const id = this.load(bytes, name, key);
        entry = { id, refs: 0 };
        id.catch(() => {
          if (this.entries.get(key) === entry) this.entries.delete(key);
        });
      }
    }
    this.entries.set(key, entry);
    entry.refs++;
    let id: string;
    try {
      id = await entry.id;
    } catch (e) {
      entry.refs--;
      throw e;
    }
    const held = entry;
    let released = false;
    this.evict();
    return {
      id,
      release: () => {
        if (released) return;
        released = true;
        held.refs--;
        if (held.forgotten && held.refs === 0) this.unload(held);
        this.evict();
      },
    };
  }

  /** The model was deleted: its adapter is unloaded now, or when the last request using it ends. */
  forget(accountId: number, name: string): void {
    const key = `${accountId}\n${name}`;
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    entry.forgotten = true;
    if (entry.refs === 0) this.unload(entry);
  }

  /** Unloads least recently used adapters nobody holds until at most `capacity` are loaded. */
  private evict(): void {
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= this.capacity) return;
      if (entry.refs > 0) continue;
      this.entries.delete(key);
      this.unload(entry);
    }
  }

  private unload(entry: Entry): Promise<void> {
    const done = entry.id.then((id) => this.tuner().then((t) => t.unloadAdapter(id))).catch(() => {});
    void done;
    return done;
  }

  /**
   * Loads an adapter; when the engine holds all it can, the least recently used adapter no request holds
   * makes room (the cache's own capacity may be above the engine's). With every one in use the capacity
   * error goes to the caller, who answers it as busy.
   */
  private async load(bytes: Uint8Array, name: string, key: string): Promise<string> {
    const tuner = await this.tuner();
    for (;;) {
      try {
        return await tuner.loadAdapter(bytes, name);
      } catch (e) {
        if (!(e instanceof AdapterCapacityError)) throw e;
        const victim = [...this.entries].find(([k, entry]) => k !== key && entry.refs === 0);
        if (!victim) throw e;
        this.entries.delete(victim[0]);
        await this.unload(victim[1]);
      }
    }
  }
}
