/**
 * Loaded adapters on the GPU: one growing f32 buffer holding every adapter's A and B matrices, and the
 * directory the LoRA kernels look entries up in ((slot · layers + layer) · targets + target). Slots are
 * reused after an unload; the weight buffer grows by copying on the GPU (its generation changes, so
 * bind groups over it are remade). Changes happen between steps only (callers hold the step lock).
 */
import { LORA_ENTRY_WORDS, LORA_MAX_MEMBERS } from '../../kernels/lora.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { LORA_TARGETS } from './adapter-file.ts';
import type { LoraAdapterData } from './read-adapter.ts';
import { MAX_LORA_RANK, TARGET_INDEX } from './targets.ts';

/** Pool allocations are aligned to this many f32 (16 bytes). */
const ALIGN = 4;

interface Slot {
  /** Pool ranges [offset, length) in f32 elements. */
  ranges: [number, number][];
  rank: number;
  /** Per layer: bit TARGET_INDEX[t] set when the adapter adapts target t there. */
  layerTargets: Uint8Array;
}

export class LoraPool {
  readonly targetsPerLayer = LORA_TARGETS.length;
  readonly directory: GPUBuffer;
  /** The weight pool; replaced (and `generation` bumped) when it grows. */
  weights: GPUBuffer;
  /** Intermediate rank values per token (tokens × LORA_MAX_MEMBERS × MAX_LORA_RANK f32), made with the first adapter. */
  scratch: GPUBuffer | undefined;
  generation = 0;
  private readonly slots: (Slot | undefined)[];
  /** Free pool ranges [offset, length), sorted by offset. */
  private free: [number, number][] = [];
  private capacity = 0;
  private readonly entryWords: number;

  constructor(
    private readonly ctx: KernelContext,
    readonly layers: number,
    readonly maxAdapters: number,
    private readonly maxTokens: number,
  ) {
    this.slots = new Array(maxAdapters).fill(undefined);
    this.entryWords = layers * this.targetsPerLayer * LORA_ENTRY_WORDS;
    this.directory = ctx.storage('lora.directory', maxAdapters * this.entryWords * 4);
    this.weights = ctx.storage('lora.weights', 16);
  }

  get count(): number {
    return this.slots.filter((s) => s !== undefined).length;
  }

  /** Bytes of GPU memory the pool holds. */
  get bytes(): number {
    return this.directory.size + this.weights.size + (this.scratch?.size ?? 0);
  }

  rankOf(slot: number): number {
    return this.slot(slot).rank;
  }

  /** Bitmask over targets (TARGET_INDEX) that the adapter in `slot` adapts at `layer`. */
  targetsAt(slot: number, layer: number): number {
    return this.slot(slot).layerTargets[layer];
  }

  private slot(i: number): Slot {
    const s = this.slots[i];
    if (!s) throw new Error(`LoRA pool slot ${i} is empty`);
    return s;
  }

  /** Upload an adapter; `scale` is the user scale (each matrix runs at scale · alpha / rank, or scale when alpha is 0). */
  add(data: LoraAdapterData, scale: number): number {
    const index = this.slots.indexOf(undefined);
    if (index < 0) throw new Error(`all ${this.maxAdapters} adapter slots are in use; unload an adapter first`);
    const q = this.ctx.device.queue;
    this.scratch ??= this.ctx.storage('lora.scratch', this.maxTokens * LORA_MAX_MEMBERS * MAX_LORA_RANK * 4);
    const slot: Slot = { ranges: [], rank: 0, layerTargets: new Uint8Array(this.layers) };
    const entries = new Uint32Array(this.entryWords);
    const entriesF = new Float32Array(entries.buffer);
    try {
      for (const m of data.matrices) {
        const a = this.allocate(m.a.length);
        slot.ranges.push([a, m.a.length]);
        const b = this.allocate(m.b.length);
        slot.ranges.push([b, m.b.length]);
        q.writeBuffer(this.weights, a * 4, m.a.buffer, m.a.byteOffset, m.a.byteLength);
        q.writeBuffer(this.weights, b * 4, m.b.buffer, m.b.byteOffset, m.b.byteLength);
        const e = (m.layer * this.targetsPerLayer + TARGET_INDEX[m.target]) * LORA_ENTRY_WORDS;
        entries[e] = a;
        entries[e + 1] = b;
        entries[e + 2] = m.rank;
        entriesF[e + 3] = data.alpha > 0 ? (scale * data.alpha) / m.rank : scale;
        slot.rank = Math.max(slot.rank, m.rank);
        slot.layerTargets[m.layer] |= 1 << TARGET_INDEX[m.target];
      }
    } catch (e) {
      for (const [o, n] of slot.ranges) this.release(o, n);
      throw e;
    }
    q.writeBuffer(this.directory, index * this.entryWords * 4, entries);
    this.slots[index] = slot;
    return index;
  }

  remove(index: number): void {
    const s = this.slot(index);
    for (const [o, n] of s.ranges) this.release(o, n);
    this.slots[index] = undefined;
    // Stale entries would be harmless (no row names the slot), but zeroed ones make a mistake visible.
    this.ctx.device.queue.writeBuffer(this.directory, index * this.entryWords * 4, new Uint32Array(this.entryWords));
  }

  destroy(): void {
    this.directory.destroy();
    this.weights.destroy();
    this.scratch?.destroy();
  }

  /** First fit in the free list, growing the pool when nothing fits. Returns an f32 offset. */
  private allocate(n: number): number {
    const len = Math.ceil(n / ALIGN) * ALIGN;
    for (let i = 0; i < this.free.length; i++) {
      const [o, l] = this.free[i];
      if (l < len) continue;
      if (l === len) this.free.splice(i, 1);
      else this.free[i] = [o + len, l - len];
      return o;
    }
    this.grow(len);
    return this.allocate(n);
  }

  private release(offset: number, n: number): void {
    const len = Math.ceil(n / ALIGN) * ALIGN;
    this.free.push([offset, len]);
    this.free.sort((a, b) => a[0] - b[0]);
    const merged: [number, number][] = [];
    for (const r of this.free) {
      const last = merged[merged.length - 1];
      if (last && last[0] + last[1] === r[0]) last[1] += r[1];
      else merged.push([r[0], r[1]]);
    }
    this.free = merged;
  }

  private grow(atLeast: number): void {
    const caps = this.ctx.caps;
    const limit = Math.floor(Math.min(caps.maxStorageBinding, caps.maxBufferSize) / 4);
    // A free range at the end extends into the new space.
    const tail = this.free.length > 0 && this.free[this.free.length - 1][0] + this.free[this.free.length - 1][1] === this.capacity ? this.free[this.free.length - 1][1] : 0;
    const needed = this.capacity + atLeast - tail;
    if (needed > limit) throw new Error(`loaded adapters would need ${needed * 4} bytes of GPU memory in one buffer; this device binds at most ${limit * 4}`);
    const size = Math.min(limit, Math.max(needed, this.capacity * 2, 1 << 18));
    const next = this.ctx.storage('lora.weights', size * 4);
    if (this.capacity > 0) {
      const enc = this.ctx.device.createCommandEncoder({ label: 'lora.grow' });
      enc.copyBufferToBuffer(this.weights, 0, next, 0, this.capacity * 4);
      this.ctx.device.queue.submit([enc.finish()]);
    }
    this.weights.destroy();
    this.weights = next;
    this.release(this.capacity, size - this.capacity);
    this.capacity = size;
    this.generation++;
  }
}
