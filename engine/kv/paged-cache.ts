/**
 * The KV cache on the GPU: per layer one K and one V buffer of `numPages × pageSize` rows (a row holds
 * all KV heads of one position), plus the page-table buffer the attention kernel reads.
 */
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { PageAllocator } from './page-allocator.ts';
import { kvValueBytes, type KvFormat } from '../../kernels/kv-format.ts';

export interface KvCacheOptions {
  layers: number;
  kvDim: number;
  pageSize: number;
  maxSeqs: number;
  /** Longest sequence (positions) a slot may hold. */
  maxSeqLength: number;
  /** Bytes of GPU memory for K and V of all layers together. */
  budgetBytes: number;
  /** How values are held (kernels/kv-format.ts; default 'f32'). */
  format?: KvFormat;
}

export class PagedKvCache {
  readonly allocator: PageAllocator;
  readonly k: GPUBuffer[] = [];
  readonly v: GPUBuffer[] = [];
  readonly pageTable: GPUBuffer;
  readonly maxPagesPerSeq: number;
  readonly bytes: number;
  readonly format: KvFormat;
  private readonly pageBytes: number;
  /** A page's worth of staging for encodeCopyRows (WebGPU copies no buffer onto itself); made on first use. */
  private staging: GPUBuffer | undefined;

  constructor(
    private readonly ctx: KernelContext,
    readonly opts: KvCacheOptions,
  ) {
    this.format = opts.format ?? 'f32';
    const rowBytes = opts.kvDim * kvValueBytes(this.format);
    const pageBytes = opts.pageSize * rowBytes;
    this.pageBytes = pageBytes;
    this.maxPagesPerSeq = Math.ceil(opts.maxSeqLength / opts.pageSize);
    // Enough pages for the budget, but no more than every slot at full length, and each layer's buffer
    // must fit one storage binding.
    const byBudget = Math.floor(opts.budgetBytes / (2 * opts.layers * pageBytes));
    const byUse = this.maxPagesPerSeq * opts.maxSeqs;
    const byBinding = Math.floor(Math.min(ctx.caps.maxStorageBinding, ctx.caps.maxBufferSize) / pageBytes);
    const numPages = Math.min(byBudget, byUse, byBinding);
    if (numPages < this.maxPagesPerSeq) {
      throw new Error(
        `KV cache budget of ${(opts.budgetBytes / 2 ** 20).toFixed(0)} MiB holds ${numPages * opts.pageSize} positions, less than one sequence of ${opts.maxSeqLength}; raise the budget or lower the context`,
      );
    }
    this.allocator = new PageAllocator(numPages, opts.pageSize, opts.maxSeqs, this.maxPagesPerSeq);
    for (let l = 0; l < opts.layers; l++) {
      this.k.push(ctx.storage(`kv.k.${l}`, numPages * pageBytes));
      this.v.push(ctx.storage(`kv.v.${l}`, numPages * pageBytes));
    }
    this.pageTable = ctx.storage('kv.page-table', this.allocator.table.byteLength);
    this.bytes = 2 * opts.layers * numPages * pageBytes;
  }

  get pageSize(): number {
    return this.opts.pageSize;
  }

  /** Upload the page-table rows that changed; call before encoding a step that uses them. */
  syncPageTable(): void {
    const rowBytes = this.maxPagesPerSeq * 4;
    const t = this.allocator.table;
    for (const slot of this.allocator.takeDirty()) {
      this.ctx.device.queue.writeBuffer(this.pageTable, slot * rowBytes, t.buffer, t.byteOffset + slot * rowBytes, rowBytes);
    }
  }

  /**
   * Encode copying positions 0 .. rows - 1 of page `from` onto the same positions of page `to`, K and V of
   * every layer (a prefix-cache page a prompt matches the start of). Through a staging buffer, since a
   * copy's source and destination must be different buffers; the copies run in order, so one page of
   * staging serves them all.
   */
  encodeCopyRows(enc: GPUCommandEncoder, from: number, to: number, rows: number): void {
    if (rows <= 0 || rows >= this.opts.pageSize || from === to) throw new Error(`KV row copy: ${rows} rows from page ${from} to page ${to} (a page holds ${this.opts.pageSize})`);
    // Offsets are whole pages (multiples of 4 bytes); the size rounds up within the page.
    const bytes = Math.min(this.pageBytes, Math.ceil((rows * this.pageBytes) / this.opts.pageSize / 4) * 4);
    this.staging ??= this.ctx.device.createBuffer({ label: 'kv.copy-staging', size: this.pageBytes, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    for (const b of [...this.k, ...this.v]) {
      enc.copyBufferToBuffer(b, from * this.pageBytes, this.staging, 0, bytes);
      enc.copyBufferToBuffer(this.staging, 0, b, to * this.pageBytes, bytes);
    }
  }

  destroy(): void {
    this.staging?.destroy();
    for (const b of [...this.k, ...this.v, this.pageTable]) b.destroy();
  }
}
