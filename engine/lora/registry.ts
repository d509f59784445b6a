/**
 * The engine's loaded LoRA adapters: ids, handles, which sequences use each, and the GPU pool under
 * them. Loading reads and checks the file off the step lock and uploads under it; unloading waits for
 * the sequences that use the adapter to end (new ones are refused meanwhile), then frees its slot.
 */
import type { AsyncLock } from '../generate/lock.ts';
import type { ModelConfig } from '../arch/types.ts';
import { BytesSource, type ModelSource } from '../loader/source.ts';
import { AdapterCapacityError, EngineInputError, type AdapterHandle, type LoadAdapterOptions } from '../types.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { LoraPool } from './pool.ts';
import { readLoraAdapter } from './read-adapter.ts';

interface Entry {
  handle: AdapterHandle;
  slot: number;
  /** Sequences (and diagnostics) running with it now. */
  users: number;
  /** Set once unloading began: new users are refused, and this resolves when the last one leaves. */
  drained?: { promise: Promise<void>; resolve: () => void };
}

/** What a sequence holds while it runs with an adapter; release() exactly once when it ends. */
export interface AdapterLease {
  id: string;
  slot: number;
  release(): void;
}

export interface AdapterRegistryDeps {
  ctx: KernelContext;
  cfg: ModelConfig;
  /** Adapters loaded at once (GPU directory entries). */
  maxAdapters: number;
  /** Tokens per step (the LoRA scratch rows). */
  maxTokensPerStep: number;
  /** Most F32 bytes of one adapter's weights. */
  maxAdapterBytes?: number;
  /** The step lock: the pool changes only between steps. */
  lock: AsyncLock;
  /** Called once with the pool when the first adapter loads (compile kernels, bind paths). */
  enable(pool: LoraPool): void;
  /** Called after an adapter is gone (drop its prefix-cache pages). */
  unloaded(id: string): void;
}

export class AdapterRegistry {
  private readonly entries = new Map<string, Entry>();
  private nextId = 1;
  private pool: LoraPool | undefined;

  constructor(private readonly deps: AdapterRegistryDeps) {}

  get count(): number {
    return this.entries.size;
  }

  list(): AdapterHandle[] {
    return [...this.entries.values()].map((e) => ({ ...e.handle, targets: [...e.handle.targets] }));
  }

  async load(source: ModelSource, opts: LoadAdapterOptions = {}): Promise<AdapterHandle> {
    const scale = opts.scale ?? 1;
    if (typeof scale !== 'number' || !Number.isFinite(scale)) throw new EngineInputError(`adapter scale must be a finite number (got ${String(opts.scale)})`, 'scale');
    if (opts.name !== undefined && (typeof opts.name !== 'string' || opts.name.length === 0 || opts.name.length > 256)) {
      throw new EngineInputError('adapter name must be a string of 1 to 256 characters', 'name');
    }
    const max = this.deps.maxAdapters;
    const full = () => new AdapterCapacityError(max);
    if (this.entries.size >= max) throw full();
    const data = await readLoraAdapter(source, this.deps.cfg, { maxBytes: this.deps.maxAdapterBytes });
    const slot = await this.deps.lock.run(async () => {
      if (this.entries.size >= max) throw full();
      if (!this.pool) {
        const d = this.deps;
        this.pool = new LoraPool(d.ctx, d.cfg.nLayers, max, d.maxTokensPerStep);
        d.enable(this.pool);
      }
      return this.pool.add(data, scale);
    });
    const id = `lora-${this.nextId++}`;
    const handle: AdapterHandle = {
      id,
      // Bytes have no file name to fall back on; the id names them then.
      name: opts.name ?? data.name ?? (source instanceof BytesSource ? undefined : source.name.split(/[\\/]/).pop()) ?? id,
      rank: data.rank,
      alpha: data.alpha,
      scale,
      targets: data.targets,
      layers: data.layers,
      bytes: data.bytes,
    };
    this.entries.set(id, { handle, slot, users: 0 });
    return { ...handle, targets: [...handle.targets] };
  }

  /** Take the adapter `id` for a sequence; unknown or unloading ids are the caller's error. */
  acquire(id: string): AdapterLease {
    if (typeof id !== 'string') throw new EngineInputError(`adapter must be an adapter id string (got ${typeof id})`, 'adapter');
    const e = this.entries.get(id);
    if (!e) throw new EngineInputError(`unknown adapter "${id}" (loaded: ${[...this.entries.keys()].join(', ') || 'none'})`, 'adapter');
    if (e.drained) throw new EngineInputError(`adapter "${id}" is being unloaded`, 'adapter');
    e.users++;
    let released = false;
    return {
      id,
      slot: e.slot,
      release: () => {
        if (released) return;
        released = true;
        if (--e.users === 0) e.drained?.resolve();
      },
    };
  }

  /**
   * Unload `id`: refuses new sequences at once, waits for those running with it to end, then frees its
   * GPU memory. Unloading an id that is already unloading waits for the same end.
   */
  async unload(id: string): Promise<void> {
    const e = this.entries.get(id);
    if (!e) throw new EngineInputError(`unknown adapter "${id}"`, 'adapter');
    if (!e.drained) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      e.drained = { promise, resolve };
      if (e.users === 0) resolve();
      void promise.then(() =>
        this.deps.lock.run(async () => {
          this.pool!.remove(e.slot);
          this.entries.delete(id);
          this.deps.unloaded(id);
        }),
      );
    }
    await e.drained.promise;
    // The removal runs under the lock after the drain; wait for it (the lock is FIFO).
    await this.deps.lock.run(async () => {});
  }

  destroy(): void {
    this.pool?.destroy();
  }
}
