/**
 * A long step's KV mirror (engine/kv/kv-mirror.ts): each layer's rows that the step's sequences attend to,
 * gathered from the paged f16 cache into textures, give attention (kvSource 'mirror') exactly the bits it
 * computes over the paged cache, for several sequences with scattered pages, one query head or a group an
 * invocation, a sliding window and the O product's quantized output; the mirror grows when a step needs
 * more rows, and a step mirrors only where enough tokens read each row.
 */
import { describe, expect, it } from 'vitest';
import { floatToHalf } from '../../engine/gguf/quant/half.ts';
import { KvMirror, type KvMirrorOptions } from '../../engine/kv/kv-mirror.ts';
import { PagedKvCache } from '../../engine/kv/paged-cache.ts';
import { AttentionKernel } from '../../kernels/attention.ts';
import { q8RowVec4s } from '../../kernels/quantize-x.ts';
import { readBuffer, runPass, runStep, testContext } from '../helpers/gpu.ts';
import { randomF32 } from '../helpers/random.ts';

const ctx = await testContext();
const [heads, kvHeads, hd, pageSize, layers] = [9, 3, 64, 16, 2];
const kvDim = kvHeads * hd;

/** A two-layer f16 cache for 4 sequences, every page filled with random halves, page tables scattered by allocation order. */
function filledCache(lengths: Map<number, number>): PagedKvCache {
  const cache = new PagedKvCache(ctx, { layers, kvDim, pageSize, maxSeqs: 4, maxSeqLength: 512, budgetBytes: 8 * 2 ** 20, format: 'f16' });
  // Interleave the slots' page reservations so no sequence's pages are contiguous.
  for (let len = pageSize; [...lengths.values()].some((n) => n >= len - pageSize + 1); len += pageSize) {
    for (const [slot, n] of lengths) if (n > len - pageSize) expect(cache.allocator.reserve(slot, Math.min(n, len))).toBe(true);
  }
  cache.syncPageTable();
  const halves = cache.k[0].size / 2;
  cache.k.concat(cache.v).forEach((b, i) => {
    ctx.device.queue.writeBuffer(b, 0, Uint16Array.from(randomF32(halves, 100 + i, 2), floatToHalf));
  });
  return cache;
}

interface Token {
  slot: number;
  pos: number;
}

/** Step inputs and output, made once for every step as the engine's workspace is. */
interface StepBuffers {
  q: GPUBuffer;
  pos: GPUBuffer;
  seq: GPUBuffer;
  out: GPUBuffer;
}

const MAX_T = 64;

function stepBuffers(): StepBuffers {
  return { q: ctx.storage('q', MAX_T * heads * hd * 4), pos: ctx.storage('pos', MAX_T * 4), seq: ctx.storage('seq', MAX_T * 4), out: ctx.storage('out', MAX_T * heads * hd * 4) };
}

async function attend(cache: PagedKvCache, tokens: Token[], io: StepBuffers, opts: { window?: number; output?: 'f32' | 'q8_0'; minGrouped?: number; mirror?: KvMirror } = {}) {
  const T = tokens.length;
  const att = new AttentionKernel(ctx, 'serial', opts.minGrouped, 'f16');
  const positions = Uint32Array.from(tokens.map((t) => t.pos));
  const slots = Uint32Array.from(tokens.map((t) => t.slot));
  const { q, pos, seq, out } = io;
  ctx.device.queue.writeBuffer(q, 0, randomF32(T * heads * hd, 7 + T, 1));
  ctx.device.queue.writeBuffer(pos, 0, positions);
  ctx.device.queue.writeBuffer(seq, 0, slots);
  const outBytes = opts.output === 'q8_0' ? T * q8RowVec4s(heads * hd) * 16 : T * heads * hd * 4;
  const outs: ArrayBuffer[] = [];
  for (let l = 0; l < layers; l++) {
    const p = { tokens: T, heads, kvHeads, headDim: hd, pageSize, maxPages: cache.maxPagesPerSeq, scale: 0.125, window: opts.window, output: opts.output };
    const mirror = opts.mirror;
    // Cleared, so a pass that wrote nothing cannot pass for one that wrote the same as the last.
    ctx.device.queue.writeBuffer(out, 0, new Uint8Array(outBytes));
    if (mirror) {
      const plan = mirror.plan(slots, positions, T);
      expect(plan).toBeDefined();
      await runStep(ctx, (pass, arena) => {
        mirror.encodeLayer(pass, arena, l, plan!);
        att.encode(pass, arena, mirror.attentionGroup(out), { ...p, kvSource: 'mirror' });
      });
    } else {
      await runPass(ctx, (pass, arena) => att.encode(pass, arena, att.bind(q, cache.k[l], cache.v[l], cache.pageTable, pos, seq, out), p));
    }
    outs.push((await readBuffer(ctx, out)).slice(0, outBytes));
  }
  return outs;
}

/** The mirror over `cache`, its attention reading and writing `io` (the step's buffers). */
function mirrorFor(cache: PagedKvCache, io: StepBuffers, thresholds: KvMirrorOptions = { minReads: 0, minReadsPerRow: 0 }) {
  const att = new AttentionKernel(ctx, 'serial', undefined, 'f16');
  return new KvMirror(ctx, cache, (k, v, firstRows, out) => att.bindMirror(io.q, k, v, firstRows, io.pos, io.seq, out), thresholds);
}

const prefillAfterPrefix: Token[] = [
  ...Array.from({ length: 40 }, (_, i) => ({ slot: 2, pos: 100 + i })),
  { slot: 0, pos: 300 },
  ...Array.from({ length: 20 }, (_, i) => ({ slot: 3, pos: i })),
];
/** The first byte where two outputs differ, or -1 (a failing toEqual would print a diff of every byte). */
function firstDifference(a: ArrayBuffer, b: ArrayBuffer): number {
  const [x, y] = [new Uint8Array(a), new Uint8Array(b)];
  if (x.length !== y.length) return Math.min(x.length, y.length);
  return x.findIndex((v, i) => v !== y[i]);
}

const lengthsOf = (tokens: Token[]) => {
  const m = new Map<number, number>();
  for (const t of tokens) m.set(t.slot, Math.max(m.get(t.slot) ?? 0, t.pos + 1));
  return m;
};

describe('KV mirror for long steps', () => {
  it.each([
    { name: 'query heads grouped', opts: {} },
    { name: 'one query head an invocation', opts: { minGrouped: Infinity } },
    { name: 'sliding window of 50', opts: { window: 50 } },
    { name: "the O product's quantized output", opts: { output: 'q8_0' as const } },
  ])('attention over the mirror equals attention over the paged cache, bit for bit ($name)', async ({ opts }) => {
    const cache = filledCache(lengthsOf(prefillAfterPrefix));
    const io = stepBuffers();
    const paged = await attend(cache, prefillAfterPrefix, io, opts);
    const mirror = mirrorFor(cache, io);
    const viaMirror = await attend(cache, prefillAfterPrefix, io, { ...opts, mirror });
    for (let l = 0; l < layers; l++) expect(firstDifference(viaMirror[l], paged[l])).toBe(-1);
    // The layers differ, so each layer's own rows were read.
    expect(firstDifference(paged[0], paged[1])).not.toBe(-1);
    mirror.destroy();
    cache.destroy();
  });

  it('grows for a step that mirrors more rows, and still reads the right ones', async () => {
    // 912 rows of 24 texels: past the 16 384 texels a mirror starts with.
    const long: Token[] = [...Array.from({ length: 16 }, (_, i) => ({ slot: 1, pos: 480 + i })), ...Array.from({ length: 16 }, (_, i) => ({ slot: 2, pos: 400 + i }))];
    const cache = filledCache(new Map([...lengthsOf(prefillAfterPrefix), ...lengthsOf(long)]));
    // The engine's step buffers stay the same from step to step: the mirror's attention bind groups must
    // follow its new textures when they grow.
    const io = stepBuffers();
    const mirror = mirrorFor(cache, io);
    const sizes: number[] = [];
    for (const tokens of [prefillAfterPrefix.slice(41), long, prefillAfterPrefix]) {
      const paged = await attend(cache, tokens, io);
      const viaMirror = await attend(cache, tokens, io, { mirror });
      for (let l = 0; l < layers; l++) expect(firstDifference(viaMirror[l], paged[l])).toBe(-1);
      sizes.push(mirror.bytes);
    }
    // K and V, staging and texture each: 16 384 texels, then 912 rows' worth doubled.
    expect(sizes).toEqual([4 * 16 * 16384, 4 * 16 * 32768, 4 * 16 * 32768]);
    mirror.destroy();
    cache.destroy();
  });

  it('plans a run per sequence, and mirrors a step only where enough tokens read each row', () => {
    const cache = filledCache(new Map([[0, 320]]));
    // The default thresholds (MIRROR_MIN_READS, MIRROR_MIN_READS_PER_ROW).
    const mirror = mirrorFor(cache, stepBuffers(), {});
    const plan = (tokens: Token[]) => mirror.plan(Uint32Array.from(tokens.map((t) => t.slot)), Uint32Array.from(tokens.map((t) => t.pos)), tokens.length);
    // Rows 0 .. the last position of each sequence, a run per sequence.
    expect(mirrorFor(cache, stepBuffers()).plan(Uint32Array.from(prefillAfterPrefix.map((t) => t.slot)), Uint32Array.from(prefillAfterPrefix.map((t) => t.pos)), prefillAfterPrefix.length)).toEqual({ runs: 3, maxRows: 301, rows: 140 + 301 + 20 });
    // 48 tokens after 270 cached positions: 14 136 reads of 318 rows.
    expect(plan(Array.from({ length: 48 }, (_, i) => ({ slot: 0, pos: 270 + i })))).toEqual({ runs: 1, maxRows: 318, rows: 318 });
    // 64 tokens after 128: 10 272 reads, where the mirror measured no faster than the paged cache.
    expect(plan(Array.from({ length: 64 }, (_, i) => ({ slot: 0, pos: 128 + i })))).toBeUndefined();
    // A 64-token prompt from position 0: 2 080 reads, too few to pay for a layer's gather and copies.
    expect(plan(Array.from({ length: 64 }, (_, i) => ({ slot: 0, pos: i })))).toBeUndefined();
    // Decode rows of 4 sequences at 3 000 positions each read every row once.
    expect(plan([0, 1, 2, 3].map((slot) => ({ slot, pos: 2999 })))).toBeUndefined();
    mirror.destroy();
    cache.destroy();
  });
});
