/**
 * A long step's KV rows mirrored in textures for attention (CPU rasterisers that read textures faster than
 * storage buffers: GpuCaps.weightTextures, llvmpipe).
 *
 * Attention over the paged cache loads every earlier K and V row once per token of the step, and on
 * llvmpipe each of those storage loads is a loop over the SIMD lanes; a texel load is one branchless
 * gather (kernels/attention-mirror.wgsl). The cache itself stays in buffers, since texture stores are slow
 * there (kernels/README.md, session 11). Instead, in steps where many tokens read the same rows (a
 * prompt's chunk after a long cached prefix or earlier chunks), each layer gathers the rows its
 * sequences attend to into one linear run per sequence (kernels/kv-mirror.wgsl), copies the runs into two
 * textures, and attention reads those: every row is loaded from the buffer once, not once per token.
 * One staging buffer and one texture for K and for V serve every layer in turn (the queue orders each
 * layer's gather, copy and attention before the next layer's gather).
 */
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { KvMirrorKernel, MIRROR_RUN_WORDS } from '../../kernels/kv-mirror.ts';
import type { ParamArena } from '../../kernels/runtime/arena.ts';
import { copyTexels, texelTexture, WEIGHT_TEXTURE_WIDTH } from '../../kernels/runtime/weights.ts';
import type { PagedKvCache } from './paged-cache.ts';

/**
 * A step mirrors when its tokens read at least this many (token, position) pairs in each layer, and on
 * average at least MIN_READS_PER_ROW tokens read each mirrored row: a layer's gather, two copies and
 * pass break cost about what attention saves on ten thousand pairs (on the 2-core machine, a 64-token
 * chunk after 128 cached positions, 10 272 pairs, measured no faster mirrored; after 256, 18 432 pairs,
 * 0.90x the time: kernels/README.md).
 */
export const MIRROR_MIN_READS = 12288;
export const MIRROR_MIN_READS_PER_ROW = 8;

/** The rows one step mirrors: a run per sequence. */
export interface MirrorPlan {
  /** Sequences (runs) in the step. */
  runs: number;
  /** Rows of the longest run. */
  maxRows: number;
  /** Rows of all runs. */
  rows: number;
}

export interface KvMirrorOptions {
  /** Fewest (token, position) pairs a step's attention reads in each layer for it to mirror (default MIRROR_MIN_READS). */
  minReads?: number;
  /** Fewest reads of each mirrored row on average (default MIRROR_MIN_READS_PER_ROW). */
  minReadsPerRow?: number;
}

export class KvMirror {
  private readonly gather: KvMirrorKernel;
  /** Per slot: the mirror row of its position 0 (attention's binding 3). */
  readonly firstRows: GPUBuffer;
  private readonly runsBuffer: GPUBuffer;
  private readonly firstRowsHost: Uint32Array;
  private readonly runsHost: Uint32Array;
  /** plan()'s scratch: rows by slot (zero between calls), and the step's slots in order. */
  private readonly rowsOfSlot: Uint32Array;
  private readonly runSlots: Uint32Array;
  /** vec4s of one KV row. */
  private readonly rowVec4s: number;
  private readonly maxTexels: number;
  private capacity = 0;
  private staging: { k: GPUBuffer; v: GPUBuffer } | undefined;
  private textures: { k: GPUTexture; v: GPUTexture } | undefined;
  private gatherGroups: GPUBindGroup[] = [];
  private readonly attentionGroups = new Map<GPUBuffer, GPUBindGroup>();
  private readonly minReads: number;
  private readonly minReadsPerRow: number;

  constructor(
    private readonly ctx: KernelContext,
    private readonly cache: PagedKvCache,
    /** Attention's bind group reading this mirror and writing `out` (AttentionKernel.bindMirror). */
    private readonly bindAttention: (k: GPUTexture, v: GPUTexture, firstRows: GPUBuffer, out: GPUBuffer) => GPUBindGroup,
    opts: KvMirrorOptions = {},
  ) {
    if (cache.format !== 'f16') throw new Error('KV mirror: attention reads a mirror of the f16 cache format only');
    const rowBytes = cache.opts.kvDim * 2;
    if (rowBytes % 16 !== 0) throw new Error(`KV mirror: a KV row of ${rowBytes} bytes is not whole vec4s`);
    this.rowVec4s = rowBytes / 16;
    // A step mirrors at most every position the pool holds, so the mirror (K and V, staging and texture)
    // stays within twice one layer's K and V.
    this.maxTexels = Math.min(WEIGHT_TEXTURE_WIDTH * ctx.caps.maxTextureDimension2D, Math.ceil(cache.k[0].size / 16 / WEIGHT_TEXTURE_WIDTH) * WEIGHT_TEXTURE_WIDTH);
    this.gather = new KvMirrorKernel(ctx, this.rowVec4s);
    const slots = cache.opts.maxSeqs;
    this.firstRowsHost = new Uint32Array(slots);
    this.runsHost = new Uint32Array(slots * MIRROR_RUN_WORDS);
    this.rowsOfSlot = new Uint32Array(slots);
    this.runSlots = new Uint32Array(slots);
    this.firstRows = ctx.storage('kv-mirror.first-rows', Math.max(16, slots * 4));
    this.runsBuffer = ctx.storage('kv-mirror.runs', this.runsHost.byteLength);
    this.minReads = opts.minReads ?? MIRROR_MIN_READS;
    this.minReadsPerRow = opts.minReadsPerRow ?? MIRROR_MIN_READS_PER_ROW;
  }

  /**
   * The mirror for a step of `tokens` tokens (each at `positions[i]` of the sequence in `slots[i]`), or
   * undefined where it would not pay. Uploads the step's runs; call before encoding the step.
   */
  plan(slots: Uint32Array, positions: Uint32Array, tokens: number): MirrorPlan | undefined {
    let reads = 0;
    for (let i = 0; i < tokens; i++) reads += positions[i] + 1;
    if (reads < this.minReads) return undefined;
    // Rows of each slot (its longest token's positions), slots in order of first appearance.
    const rowsOf = this.rowsOfSlot;
    let runs = 0;
    for (let i = 0; i < tokens; i++) {
      const slot = slots[i];
      if (rowsOf[slot] === 0) this.runSlots[runs++] = slot;
      rowsOf[slot] = Math.max(rowsOf[slot], positions[i] + 1);
    }
    let total = 0;
    let maxRows = 0;
    for (let r = 0; r < runs; r++) {
      const rows = rowsOf[this.runSlots[r]];
      this.firstRowsHost[this.runSlots[r]] = total;
      const w = r * MIRROR_RUN_WORDS;
      this.runsHost[w] = this.runSlots[r];
      this.runsHost[w + 1] = total;
      this.runsHost[w + 2] = rows;
      total += rows;
      maxRows = Math.max(maxRows, rows);
    }
    for (let r = 0; r < runs; r++) rowsOf[this.runSlots[r]] = 0;
    if (reads < this.minReadsPerRow * total || total * this.rowVec4s > this.maxTexels) return undefined;
    this.reserve(total * this.rowVec4s);
    const q = this.ctx.device.queue;
    q.writeBuffer(this.firstRows, 0, this.firstRowsHost);
    q.writeBuffer(this.runsBuffer, 0, this.runsHost, 0, runs * MIRROR_RUN_WORDS);
    return { runs, maxRows, rows: total };
  }

  /** Gather layer `layer`'s rows of the plan and copy them into the textures, ready for attention. */
  encodeLayer(pass: GPUComputePassEncoder, arena: ParamArena, layer: number, plan: MirrorPlan): void {
    const staging = this.staging!;
    const textures = this.textures!;
    this.gather.encode(pass, arena, this.gatherGroups[layer], { pageSize: this.cache.pageSize, maxPages: this.cache.maxPagesPerSeq, runs: plan.runs, maxRows: plan.maxRows });
    const texels = plan.rows * this.rowVec4s;
    arena.copyBetween((encoder) => {
      copyTexels(encoder, staging.k, textures.k, texels);
      copyTexels(encoder, staging.v, textures.v, texels);
    });
  }

  /** Attention's bind group over the mirror, writing `out`. */
  attentionGroup(out: GPUBuffer): GPUBindGroup {
    let g = this.attentionGroups.get(out);
    if (!g) {
      const t = this.textures!;
      this.attentionGroups.set(out, (g = this.bindAttention(t.k, t.v, this.firstRows, out)));
    }
    return g;
  }

  /** Room for `texels` vec4s of K and of V, growing the staging buffers and textures by doubling. */
  private reserve(texels: number): void {
    if (texels <= this.capacity) return;
    const W = WEIGHT_TEXTURE_WIDTH;
    const capacity = Math.min(this.maxTexels, Math.max(texels, 2 * this.capacity, 4 * W));
    // Whole texture rows, so the staging covers every row a copy reads.
    const rows = Math.ceil(capacity / W);
    const device = this.ctx.device;
    const buffer = (name: string) => device.createBuffer({ label: `kv-mirror.${name}`, size: rows * W * 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const texture = (name: string) => texelTexture(device, `kv-mirror.${name}`, rows * W);
    this.destroyStorage();
    this.staging = { k: buffer('k'), v: buffer('v') };
    this.textures = { k: texture('k-texture'), v: texture('v-texture') };
    this.capacity = rows * W;
    this.gatherGroups = this.cache.k.map((k, l) => this.gather.bind(k, this.cache.v[l], this.cache.pageTable, this.runsBuffer, this.staging!.k, this.staging!.v));
    this.attentionGroups.clear();
  }

  /** Bytes of GPU memory the mirror holds now. */
  get bytes(): number {
    return this.capacity * 16 * 4;
  }

  private destroyStorage(): void {
    this.staging?.k.destroy();
    this.staging?.v.destroy();
    this.textures?.k.destroy();
    this.textures?.v.destroy();
  }

  destroy(): void {
    this.destroyStorage();
    this.firstRows.destroy();
    this.runsBuffer.destroy();
  }
}
