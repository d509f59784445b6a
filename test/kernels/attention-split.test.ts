/**
 * Split attention on CPU rasterisers (attention-serial-split.wgsl): each (token, query-head group) pair's
 * positions walked by several invocations, the last to finish merging their partial sums. It must give
 * causal attention over the paged cache (the f64 reference) for any split count, later splits of short
 * sequences empty included; over the f16 cache and into the O product's quantized x as the unsplit
 * kernels do; and leave its counters zeroed for the next layer. Built where atomics order the stores
 * before them (GpuCaps.orderedAtomics: llvmpipe), as the decode products' tails.
 */
import { describe, expect, it } from 'vitest';
import { floatToHalf, halfToFloat } from '../../engine/gguf/quant/half.ts';
import { AttentionKernel, groupedHeads, MAX_SERIAL_SPLITS } from '../../kernels/attention.ts';
import { QuantizeXKernel, q8RowVec4s } from '../../kernels/quantize-x.ts';
import { readF32, readU32, runPass, testContext } from '../helpers/gpu.ts';
import { attentionRef } from '../helpers/attention-ref.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

const ctx = await testContext();
const [pageSize, maxPages] = [16, 32];

/** A paged cache of random values (pages of two sequences interleaved), and each token's keys and values as the reference takes them. */
function pagedCase(kvHeads: number, hd: number, batch: { seq: number; pos: number }[], kv: 'f32' | 'f16' = 'f32') {
  const kvDim = kvHeads * hd;
  const rows = 2 * maxPages * pageSize;
  const round = (xs: Float32Array) => (kv === 'f16' ? Float32Array.from(xs, (x) => halfToFloat(floatToHalf(x))) : xs);
  const [k, v] = [round(randomF32(rows * kvDim, 41)), round(randomF32(rows * kvDim, 42))];
  // Sequence s's page i is physical page 2 i + 1 - s.
  const pageTable = Uint32Array.from({ length: 2 * maxPages }, (_, i) => 2 * (i % maxPages) + 1 - Math.floor(i / maxPages));
  const row = (seq: number, p: number) => pageTable[seq * maxPages + Math.floor(p / pageSize)] * pageSize + (p % pageSize);
  const upload = (xs: Float32Array) => (kv === 'f16' ? ctx.storage('c', xs.length * 2, Uint16Array.from(xs, floatToHalf)) : ctx.storage('c', xs.byteLength, xs));
  return {
    kCache: upload(k),
    vCache: upload(v),
    pages: ctx.storage('pages', pageTable.byteLength, pageTable),
    pos: ctx.storage('pos', batch.length * 4, Uint32Array.from(batch.map((b) => b.pos))),
    seq: ctx.storage('seq', batch.length * 4, Uint32Array.from(batch.map((b) => b.seq))),
    keys: (seq: number, n: number) => Array.from({ length: n }, (_, p) => k.subarray(row(seq, p) * kvDim, (row(seq, p) + 1) * kvDim)),
    values: (seq: number, n: number) => Array.from({ length: n }, (_, p) => v.subarray(row(seq, p) * kvDim, (row(seq, p) + 1) * kvDim)),
  };
}

function splitBuffers(tokens: number, heads: number, hd: number) {
  return { partials: ctx.storage('partials', AttentionKernel.serialPartialsBytes(tokens, heads, hd)), counters: ctx.storage('counters', Math.ceil((tokens * heads) / 4) * 16) };
}

describe.skipIf(!ctx.caps.orderedAtomics)('split attention on CPU rasterisers', () => {
  const batch = [
    { seq: 0, pos: 300 },
    { seq: 1, pos: 5 },
    { seq: 1, pos: 40 },
  ];
  it.each([
    { heads: 9, kvHeads: 3, hd: 64, window: 0, softcap: 0 },
    { heads: 8, kvHeads: 2, hd: 32, window: 0, softcap: 0 },
    { heads: 4, kvHeads: 4, hd: 16, window: 0, softcap: 0 },
    { heads: 4, kvHeads: 2, hd: 8, window: 100, softcap: 0 },
    { heads: 9, kvHeads: 3, hd: 64, window: 0, softcap: 0.5 },
  ])('matches the reference for 1 to $heads heads over $kvHeads KV heads of $hd, window $window, softcap $softcap, in 2 to 32 splits', async ({ heads, kvHeads, hd, window, softcap }) => {
    const qDim = heads * hd;
    const c = pagedCase(kvHeads, hd, batch);
    const q = randomF32(batch.length * qDim, 43, 1);
    const bq = ctx.storage('q', q.byteLength, q);
    const att = new AttentionKernel(ctx, 'serial');
    const { partials, counters } = splitBuffers(batch.length, heads, hd);
    const scale = 1 / Math.sqrt(hd);
    for (const splits of [2, 7, MAX_SERIAL_SPLITS]) {
      const out = ctx.storage('out', q.byteLength);
      await runPass(ctx, (pass, arena) =>
        att.encode(pass, arena, att.bindSerialSplit(bq, c.kCache, c.vCache, c.pages, c.pos, c.seq, out, partials, counters), { tokens: batch.length, heads, kvHeads, headDim: hd, pageSize, maxPages, scale, window, softcap, splits }),
      );
      const got = await readF32(ctx, out, batch.length * qDim);
      batch.forEach((b, t) => {
        const n = b.pos + 1;
        const qt = q.subarray(t * qDim, (t + 1) * qDim);
        // The reference without softcap; with it, the scores are capped first (checked against the unsplit kernel below).
        if (softcap === 0) expect(maxRelError(got.subarray(t * qDim, (t + 1) * qDim), attentionRef(qt, c.keys(b.seq, n), c.values(b.seq, n), heads, kvHeads, hd, scale, window)), `${splits} splits, token ${t}`).toBeLessThan(1e-4);
      });
      if (softcap > 0) {
        const whole = ctx.storage('whole', q.byteLength);
        await runPass(ctx, (pass, arena) => att.encode(pass, arena, att.bind(bq, c.kCache, c.vCache, c.pages, c.pos, c.seq, whole), { tokens: batch.length, heads, kvHeads, headDim: hd, pageSize, maxPages, scale, window, softcap }));
        expect(maxRelError(got, await readF32(ctx, whole, batch.length * qDim)), `${splits} splits`).toBeLessThan(1e-5);
      }
      // The last invocation of each pair reset its counter: the next layer's dispatch starts from zero.
      expect(Array.from(await readU32(ctx, counters, batch.length * heads))).toEqual(new Array(batch.length * heads).fill(0));
    }
  });

  it('over the f16 cache writes the O product its quantized x: the bits of its f32 output through the quantize pass, close to the unsplit kernel', async () => {
    const [heads, kvHeads, hd] = [9, 3, 64];
    const qDim = heads * hd;
    const c = pagedCase(kvHeads, hd, batch, 'f16');
    const bq = ctx.storage('q', batch.length * qDim * 4, randomF32(batch.length * qDim, 44, 1));
    const att = new AttentionKernel(ctx, 'serial', undefined, 'f16');
    const quantize = new QuantizeXKernel(ctx, 'q8_0');
    const { partials, counters } = splitBuffers(batch.length, heads, hd);
    const [split, whole] = [ctx.storage('split', batch.length * qDim * 4), ctx.storage('whole', batch.length * qDim * 4)];
    const [viaPass, direct] = [ctx.storage('xq', batch.length * q8RowVec4s(qDim) * 16), ctx.storage('xq-direct', batch.length * q8RowVec4s(qDim) * 16)];
    const p = { tokens: batch.length, heads, kvHeads, headDim: hd, pageSize, maxPages, scale: 0.125 };
    await runPass(ctx, (pass, arena) => {
      att.encode(pass, arena, att.bind(bq, c.kCache, c.vCache, c.pages, c.pos, c.seq, whole), p);
      att.encode(pass, arena, att.bindSerialSplit(bq, c.kCache, c.vCache, c.pages, c.pos, c.seq, split, partials, counters), { ...p, splits: 12 });
      quantize.encode(pass, arena, quantize.bind(split, viaPass), { tokens: batch.length, k: qDim });
      att.encode(pass, arena, att.bindSerialSplit(bq, c.kCache, c.vCache, c.pages, c.pos, c.seq, direct, partials, counters), { ...p, splits: 12, output: 'q8_0' });
    });
    expect(maxRelError(await readF32(ctx, split, batch.length * qDim), await readF32(ctx, whole, batch.length * qDim))).toBeLessThan(1e-5);
    const words = (batch.length * q8RowVec4s(qDim) * 16) / 4;
    expect(await readU32(ctx, direct, words)).toEqual(await readU32(ctx, viaPass, words));
  });

  it('splits long spans of few pairs into runs of at least 16 positions for about 48 invocations, up to 32 splits, none under 128 positions', () => {
    const att = new AttentionKernel(ctx, 'serial');
    expect(groupedHeads(9, 3, 64)).toBe(3);
    // SmolLM2-135M decode: 3 invocations a token unsplit. At 519 positions 16 splits; at 160, 10 runs of 16.
    expect(att.serialSplitsFor(1, 9, 3, 64, 519)).toBe(16);
    expect(att.serialSplitsFor(1, 9, 3, 64, 160)).toBe(10);
    // One head a KV head (no grouping): 9 invocations, 5 splits. Eight sequences: 24 invocations, 2 splits.
    expect(att.serialSplitsFor(1, 9, 9, 64, 519)).toBe(5);
    expect(att.serialSplitsFor(8, 9, 3, 64, 519)).toBe(2);
    // Llama-3.2-1B's 32 heads over 8 (2 an invocation): 16 invocations, 3 splits.
    expect(att.serialSplitsFor(1, 32, 8, 64, 4096)).toBe(3);
    // Under the engine's threshold (128 by default, or the caller's), or heads that are not whole vec4 pairs: none.
    expect(att.serialSplitsFor(1, 9, 3, 64, 127)).toBe(1);
    expect(att.serialSplitsFor(1, 9, 3, 64, 519, 1024)).toBe(1);
    expect(att.serialSplitsFor(1, 4, 2, 12, 519)).toBe(1);
    // Many pairs: no split pays.
    expect(att.serialSplitsFor(48, 9, 3, 64, 519)).toBe(1);
    expect(new AttentionKernel(ctx, 'workgroup').serialSplitsFor(1, 9, 3, 64, 519)).toBe(1);
  });

  it('refuses more splits than its partial sums hold, and the mirror', async () => {
    const att = new AttentionKernel(ctx, 'serial');
    const b = ctx.storage('b', 4096);
    const p = { tokens: 1, heads: 2, kvHeads: 1, headDim: 16, pageSize: 16, maxPages: 1, scale: 0.25 };
    await expect(runPass(ctx, (pass, arena) => att.encode(pass, arena, att.bindSerialSplit(b, b, b, b, b, b, b, b, b), { ...p, splits: MAX_SERIAL_SPLITS + 1 }))).rejects.toThrow(/at most 32 splits \(got 33\)/);
    const f16 = new AttentionKernel(ctx, 'serial', undefined, 'f16');
    await expect(runPass(ctx, (pass, arena) => f16.encode(pass, arena, f16.bindSerialSplit(b, b, b, b, b, b, b, b, b), { ...p, splits: 2, kvSource: 'mirror' }))).rejects.toThrow(/the paged cache/);
  });
});
