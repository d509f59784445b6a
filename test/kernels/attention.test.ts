import { describe, expect, it } from 'vitest';
import { AttentionKernel, groupedHeads, SPLIT_WORKGROUPS, tiledShape, tiledWorkgroups } from '../../kernels/attention.ts';
import { KvStoreKernel } from '../../kernels/kv-store.ts';
import { QuantizeXKernel, q8RowVec4s } from '../../kernels/quantize-x.ts';
import { readF32, readU32, runPass, testContext } from '../helpers/gpu.ts';
import { attentionRef } from '../helpers/attention-ref.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

// Two sequences share a paged cache with scattered pages. Sequence 0 already holds `past` positions; a
// batch of new tokens from both sequences is stored and attended to in one pass, as in batched decode
// and chunked prefill.
// Head dimensions that are multiples of 4 run the vec4 kernels (serial, or attention-parallel.wgsl on the
// workgroup variant), dim 6 the scalar ones; with more
// (token, KV head) pairs than `minGrouped`, query heads sharing a KV head run together (0: always,
// Infinity: never). `splits`: the workgroup variant with each (token, head) pair's positions split over
// that many workgroups and merged by the combine pass (flash-decoding): 7 leaves short sequences' later
// splits empty, 2 gives the 2100-position case splits longer than the kernel's 1024-position chunk.
// `tiled`: the workgroup variant's prefill kernel (attention-tiled.wgsl) where tiledShape applies (heads
// of an even number of vec4s): tiles of consecutive tokens that here span both sequences' runs.
describe.each([
  ['workgroup', undefined, 1, false, false],
  ['workgroup', undefined, 2, false, false],
  ['workgroup', undefined, 7, false, false],
  ['workgroup', undefined, 1, true, false],
  ['serial', undefined, 1, false, false],
  ['serial', 0, 1, false, false],
  ['serial', Infinity, 1, false, false],
  ['serial', 0, 1, false, true],
] as const)('paged KV store + attention kernels (%s, grouped from %s pairs, %s splits, tiled %s, token pairs %s)', (variant, minGrouped, splits, tiled, tokenPairs) => {
  for (const { heads, kvHeads, hd, pageSize, past0, new0, new1, window } of [
    { heads: 8, kvHeads: 4, hd: 8, pageSize: 16, past0: 5, new0: 1, new1: 3, window: 0 },
    { heads: 4, kvHeads: 1, hd: 64, pageSize: 4, past0: 150, new0: 2, new1: 70, window: 0 },
    { heads: 6, kvHeads: 2, hd: 128, pageSize: 16, past0: 40, new0: 3, new1: 1, window: 0 },
    { heads: 4, kvHeads: 2, hd: 16, pageSize: 8, past0: 60, new0: 2, new1: 30, window: 16 },
    // Not a multiple of 4: the serial variant falls back from its vec4 kernel to the scalar one.
    { heads: 4, kvHeads: 2, hd: 6, pageSize: 8, past0: 20, new0: 2, new1: 5, window: 0 },
    // Decode of one token per sequence: too few (token, KV head) pairs to group by default.
    { heads: 9, kvHeads: 3, hd: 64, pageSize: 16, past0: 37, new0: 1, new1: 1, window: 0 },
    // Past the GPU kernel's chunk of 1024 positions (two chunks and a third), and a head of 20 vec4s,
    // which does not divide its 256 invocations into whole groups.
    { heads: 2, kvHeads: 1, hd: 16, pageSize: 64, past0: 2100, new0: 2, new1: 3, window: 0 },
    { heads: 4, kvHeads: 2, hd: 80, pageSize: 16, past0: 300, new0: 1, new1: 2, window: 0 },
  ]) {
    // Splits need heads of whole vec4s and at most SPLIT_WORKGROUPS workgroups in all.
    const splitless = splits > 1 && (hd % 4 !== 0 || (new0 + new1) * heads * splits > SPLIT_WORKGROUPS);
    it.skipIf(splitless)(`matches the reference: ${heads}/${kvHeads} heads, dim ${hd}, pages of ${pageSize}${window ? `, window ${window}` : ''}`, async () => {
      const ctx = await testContext();
      const kvDim = kvHeads * hd;
      const qDim = heads * hd;
      const maxPages = 64;
      const numPages = 128;
      // Scattered page tables: sequence 0 takes odd pages from the end, sequence 1 even pages.
      const pageTable = new Uint32Array(2 * maxPages);
      for (let i = 0; i < maxPages; i++) {
        pageTable[i] = numPages - 1 - 2 * i;
        pageTable[maxPages + i] = 2 * i;
      }
      const seqLen = [past0 + new0, new1];
      const keys = seqLen.map((n, s) => Array.from({ length: n }, (_, p) => randomF32(kvDim, 1000 * s + p + 1)));
      const vals = seqLen.map((n, s) => Array.from({ length: n }, (_, p) => randomF32(kvDim, 5000 * s + p + 7)));
      // Step 1 stores sequence 0's past; step 2 stores and attends the new tokens of both sequences.
      const batch: { seq: number; pos: number }[] = [];
      for (let p = past0; p < past0 + new0; p++) batch.push({ seq: 0, pos: p });
      for (let p = 0; p < new1; p++) batch.push({ seq: 1, pos: p });
      const past = Array.from({ length: past0 }, (_, p) => ({ seq: 0, pos: p }));

      const kv = new KvStoreKernel(ctx);
      const att = new AttentionKernel(ctx, variant, minGrouped);
      const kCache = ctx.storage('k', numPages * pageSize * kvDim * 4);
      const vCache = ctx.storage('v', numPages * pageSize * kvDim * 4);
      const bPages = ctx.storage('pages', pageTable.byteLength, pageTable);
      const upload = (items: { seq: number; pos: number }[]) => {
        const k = new Float32Array(items.length * kvDim);
        const v = new Float32Array(items.length * kvDim);
        items.forEach((it, t) => {
          k.set(keys[it.seq][it.pos], t * kvDim);
          v.set(vals[it.seq][it.pos], t * kvDim);
        });
        return {
          k: ctx.storage('ksrc', k.byteLength, k),
          v: ctx.storage('vsrc', v.byteLength, v),
          pos: ctx.storage('pos', items.length * 4, Uint32Array.from(items.map((i) => i.pos))),
          seq: ctx.storage('seq', items.length * 4, Uint32Array.from(items.map((i) => i.seq))),
        };
      };
      const a = upload(past);
      await runPass(ctx, (pass, arena) =>
        kv.encode(pass, arena, kv.bind(a.k, a.v, a.pos, a.seq, bPages, kCache, vCache), { tokens: past.length, kvDim, pageSize, maxPages, kOffset: 0, vOffset: 0, srcStride: kvDim }),
      );
      const b = upload(batch);
      const q = randomF32(batch.length * qDim, 99, 1);
      const bq = ctx.storage('q', q.byteLength, q);
      const bOut = ctx.storage('out', q.byteLength);
      const scale = 1 / Math.sqrt(hd);
      await runPass(ctx, (pass, arena) => {
        kv.encode(pass, arena, kv.bind(b.k, b.v, b.pos, b.seq, bPages, kCache, vCache), { tokens: batch.length, kvDim, pageSize, maxPages, kOffset: 0, vOffset: 0, srcStride: kvDim });
        const shape = { tokens: batch.length, heads, kvHeads, headDim: hd, pageSize, maxPages, scale, window, splits, tiled, tokenPairs };
        if (splits === 1) att.encode(pass, arena, att.bind(bq, kCache, vCache, bPages, b.pos, b.seq, bOut), shape);
        else {
          const partials = ctx.storage('partials', AttentionKernel.partialsBytes(hd));
          att.encode(pass, arena, att.bind(bq, kCache, vCache, bPages, b.pos, b.seq, partials), shape, att.bindCombine(partials, bOut));
        }
      });
      const out = await readF32(ctx, bOut, batch.length * qDim);
      batch.forEach((it, t) => {
        const want = attentionRef(q.subarray(t * qDim, (t + 1) * qDim), keys[it.seq].slice(0, it.pos + 1), vals[it.seq].slice(0, it.pos + 1), heads, kvHeads, hd, scale, window);
        expect(maxRelError(out.subarray(t * qDim, (t + 1) * qDim), want), `token ${t} (seq ${it.seq}, pos ${it.pos})`).toBeLessThan(1e-4);
      });
    });
  }
});

describe('grouped-query attention on the serial kernels', () => {
  it('keeps as many query heads together as fit (an equal part of the group), none past head dimension 64 x 3', () => {
    expect(groupedHeads(9, 3, 64)).toBe(3); // SmolLM2-135M
    expect(groupedHeads(32, 8, 64)).toBe(2); // Llama 3.2 1B: 4 per KV head, 2 and 2
    expect(groupedHeads(14, 2, 64)).toBe(1); // Qwen2.5 0.5B: 7 per KV head, a prime
    expect(groupedHeads(6, 2, 128)).toBe(1);
    expect(groupedHeads(8, 8, 64)).toBe(1);
  });

  it('computes each query head exactly as the per-head kernel does, two tokens an invocation too, softcap and window included', async () => {
    const ctx = await testContext();
    const [heads, kvHeads, hd, pageSize, maxPages, tokens] = [9, 3, 64, 16, 8, 39];
    const kvDim = kvHeads * hd;
    const cache = (seed: number) => randomF32(2 * maxPages * pageSize * kvDim, seed);
    const kCache = ctx.storage('k', 2 * maxPages * pageSize * kvDim * 4, cache(3));
    const vCache = ctx.storage('v', 2 * maxPages * pageSize * kvDim * 4, cache(4));
    const pages = ctx.storage('pages', 2 * maxPages * 4, Uint32Array.from({ length: 2 * maxPages }, (_, i) => 2 * maxPages - 1 - i));
    // Two sequences' chunks of prefill: 19 tokens at positions 60..78, then 20 at 20..39 (the pair of
    // tokens 18 and 19 straddles them; the odd last token is taken twice by the pair kernel).
    const at = Array.from({ length: tokens }, (_, t) => (t < 19 ? { seq: 0, pos: 60 + t } : { seq: 1, pos: 1 + t }));
    const pos = ctx.storage('pos', tokens * 4, Uint32Array.from(at, (a) => a.pos));
    const seq = ctx.storage('seq', tokens * 4, Uint32Array.from(at, (a) => a.seq));
    const q = ctx.storage('q', tokens * heads * hd * 4, randomF32(tokens * heads * hd, 5, 1));
    for (const extra of [{}, { softcap: 0.5 }, { window: 24 }]) {
      const outs: Float32Array[] = [];
      for (const [minGrouped, tokenPairs] of [[Infinity, false], [0, false], [0, true]] as const) {
        const att = new AttentionKernel(ctx, 'serial', minGrouped);
        const out = ctx.storage('out', tokens * heads * hd * 4);
        const labels: string[] = [];
        await runPass(ctx, (pass, arena) => {
          arena.recorder = [];
          att.encode(pass, arena, att.bind(q, kCache, vCache, pages, pos, seq, out), { tokens, heads, kvHeads, headDim: hd, pageSize, maxPages, scale: 0.125, tokenPairs, ...extra });
          labels.push(...arena.recorder.map((r) => r.label));
        });
        expect(labels).toEqual([tokenPairs ? 'attention-serial-pair-d64-g3' : minGrouped === 0 ? 'attention-serial-grouped-d64-g3' : 'attention-serial-vec4-d64']);
        outs.push(await readF32(ctx, out, tokens * heads * hd));
      }
      expect(outs[1], `grouped ${JSON.stringify(extra)}`).toEqual(outs[0]);
      expect(outs[2], `pairs ${JSON.stringify(extra)}`).toEqual(outs[0]);
    }
  });

  it('writes the O product its quantized x: the same bits as the f32 output then the quantize pass, grouped or not', async () => {
    const ctx = await testContext();
    const [heads, kvHeads, hd, pageSize, maxPages] = [9, 3, 64, 16, 8];
    const kvDim = kvHeads * hd;
    const qDim = heads * hd;
    const kCache = ctx.storage('k', maxPages * pageSize * kvDim * 4, randomF32(maxPages * pageSize * kvDim, 13));
    const vCache = ctx.storage('v', maxPages * pageSize * kvDim * 4, randomF32(maxPages * pageSize * kvDim, 14));
    const pages = ctx.storage('pages', maxPages * 4, Uint32Array.from({ length: maxPages }, (_, i) => i));
    const quantize = new QuantizeXKernel(ctx, 'q8_0');
    // A decode token (per-head kernel) and a prefill chunk (grouped kernel).
    for (const tokens of [1, 24]) {
      const pos = ctx.storage('pos', tokens * 4, Uint32Array.from({ length: tokens }, (_, t) => 70 + t));
      const seq = ctx.storage('seq', tokens * 4, new Uint32Array(tokens));
      const q = ctx.storage('q', tokens * qDim * 4, randomF32(tokens * qDim, 15 + tokens, 1));
      const att = new AttentionKernel(ctx, 'serial');
      const out = ctx.storage('out', tokens * qDim * 4);
      const viaPass = ctx.storage('xq', tokens * q8RowVec4s(qDim) * 16);
      const direct = ctx.storage('xq-direct', tokens * q8RowVec4s(qDim) * 16);
      const p = { tokens, heads, kvHeads, headDim: hd, pageSize, maxPages, scale: 0.125 };
      await runPass(ctx, (pass, arena) => {
        att.encode(pass, arena, att.bind(q, kCache, vCache, pages, pos, seq, out), p);
        quantize.encode(pass, arena, quantize.bind(out, viaPass), { tokens, k: qDim });
        att.encode(pass, arena, att.bind(q, kCache, vCache, pages, pos, seq, direct), { ...p, output: 'q8_0' });
      });
      const words = (tokens * q8RowVec4s(qDim) * 16) / 4;
      expect(await readU32(ctx, direct, words), `${tokens} tokens`).toEqual(await readU32(ctx, viaPass, words));
    }
  });

  it('refuses quantized output where heads are not whole 32-value blocks', async () => {
    const ctx = await testContext();
    const att = new AttentionKernel(ctx, 'serial');
    const b = ctx.storage('b', 4096);
    await expect(
      runPass(ctx, (pass, arena) => att.encode(pass, arena, att.bind(b, b, b, b, b, b, ctx.storage('o', 4096)), { tokens: 1, heads: 2, kvHeads: 1, headDim: 16, pageSize: 16, maxPages: 1, scale: 0.25, output: 'q8_0' })),
    ).rejects.toThrow(/quantized output needs .* multiple of 32 \(got 16\)/);
  });
});

describe('tiled prefill attention', () => {
  it('takes tokens x query heads of up to 64 rows, invocations a row that divide the head, positions a round within 16 KiB', () => {
    // Llama-3.2-1B: 4 query heads a KV head of 64: 16 tokens, 2 invocations a row, 16 positions.
    expect(tiledShape(64, 4)).toEqual({ BQ: 16, GQ: 4, BK: 16, TPR: 2 });
    // SmolLM2-135M: 3 a KV head: 16 tokens (48 rows).
    expect(tiledShape(64, 3)).toEqual({ BQ: 16, GQ: 3, BK: 16, TPR: 2 });
    // Heads of 128: 8 positions a round (2 x 8 x 32 vec4s + 64 x 8 scores).
    expect(tiledShape(128, 4)).toEqual({ BQ: 16, GQ: 4, BK: 8, TPR: 2 });
    // Multi-head attention: 64 tokens; a head of 2 vec4s takes 2 invocations a row at most.
    expect(tiledShape(64, 1)).toEqual({ BQ: 64, GQ: 1, BK: 16, TPR: 2 });
    expect(tiledShape(8, 1)?.TPR).toBe(2);
    // An odd number of vec4s, more than 32, a group past 64 rows: none.
    expect(tiledShape(12, 2)).toBeUndefined();
    expect(tiledShape(256, 2)).toBeUndefined();
    expect(tiledShape(64, 65)).toBeUndefined();
  });

  it('a step makes tiles of tokens x KV heads (the engine tiles from 256 of them by default)', () => {
    // A 512-token step: Llama-3.2-1B 32 tiles x 8 KV heads, SmolLM2-135M 32 x 3 (untiled by default).
    expect(tiledWorkgroups(512, 64, 32, 8)).toBe(256);
    expect(tiledWorkgroups(512, 64, 9, 3)).toBe(96);
    expect(tiledWorkgroups(513, 64, 9, 3)).toBe(99);
    expect(tiledWorkgroups(512, 12, 4, 2)).toBe(0);
  });
});

describe('split positions (flash-decoding)', () => {
  it('splits decode steps by span and pairs: enough splits to fill the GPU, none for short spans of many pairs or on CPU kernels', async () => {
    const ctx = await testContext();
    const gpu = new AttentionKernel(ctx, 'workgroup');
    // Llama-3.2-1B: 32 heads of 64. One token at 519 positions: 8 splits of 65.
    expect(gpu.splitsFor(1, 32, 64, 519, 256)).toBe(8);
    // Four tokens: 128 pairs leave room for 2 splits, too few at a short span; at 4096 positions 2 pay.
    expect(gpu.splitsFor(4, 32, 64, 519, 256)).toBe(1);
    expect(gpu.splitsFor(4, 32, 64, 4096, 256)).toBe(2);
    // SmolLM2-135M: 9 heads; at most 16 splits.
    expect(gpu.splitsFor(1, 9, 64, 2048, 256)).toBe(16);
    expect(gpu.splitsFor(4, 9, 64, 519, 256)).toBe(7);
    // Below the engine's threshold, with more pairs than workgroups, or heads not of whole vec4s: none.
    expect(gpu.splitsFor(1, 32, 64, 200, 256)).toBe(1);
    expect(gpu.splitsFor(16, 32, 64, 8192, 256)).toBe(1);
    expect(gpu.splitsFor(1, 4, 6, 4096, 256)).toBe(1);
    expect(new AttentionKernel(ctx, 'serial').splitsFor(1, 32, 64, 4096, 256)).toBe(1);
  });
});
