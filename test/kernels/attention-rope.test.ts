/**
 * Attention that rotates as it attends (AttentionParams.rope, attention-parallel-rope.wgsl) gives what
 * the RoPE/KV-store pass followed by attention gives: the same outputs and the same K and V rows in the
 * cache, for decode steps of three sequences at once (one token each) on scattered pages, with GQA,
 * NeoX order, partial rotary and frequency factors, with each pair's positions in one workgroup or split
 * over several; and it refuses what it cannot do.
 */
import { describe, expect, it } from 'vitest';
import { AttentionKernel } from '../../kernels/attention.ts';
import { RopeKvStoreKernel } from '../../kernels/rope-kv-store.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

const ctx = await testContext();

describe('attention rotating as it attends', () => {
  const cases = [
    { name: 'normal order, GQA 6/2', heads: 6, kvHeads: 2, hd: 32, nRot: 32, neox: false, factors: false },
    { name: 'NeoX order, partial rotary', heads: 4, kvHeads: 4, hd: 32, nRot: 16, neox: true, factors: false },
    { name: 'frequency factors, one KV head', heads: 3, kvHeads: 1, hd: 16, nRot: 16, neox: false, factors: true },
  ];
  for (const c of cases) {
    it(`equals RoPE/KV-store then attention (${c.name})`, async () => {
      const qDim = c.heads * c.hd;
      const kvDim = c.kvHeads * c.hd;
      const stride = qDim + 2 * kvDim + 4;
      const [pageSize, maxPages, numPages] = [4, 8, 24];
      // Decode steps: one token a sequence, at its last position (the first sequence's very first one).
      const batch = [
        { seq: 2, pos: 0 },
        { seq: 0, pos: 13 },
        { seq: 1, pos: 30 },
      ];
      const pageTable = new Uint32Array(3 * maxPages);
      for (let i = 0; i < 3 * maxPages; i++) pageTable[i] = (i * 7) % numPages;
      const qkv = randomF32(batch.length * stride, 31 + c.hd, 2);
      const factors = c.factors ? Float32Array.from({ length: c.nRot / 2 }, (_, i) => 1 + i * 0.5) : new Float32Array([1]);
      const positions = Uint32Array.from(batch.map((b) => b.pos));
      const seqs = Uint32Array.from(batch.map((b) => b.seq));
      // Earlier positions' K and V already in the cache.
      const past = randomF32(numPages * pageSize * kvDim, 41, 1);
      const pastV = randomF32(numPages * pageSize * kvDim, 43, 1);
      const rope = { nRot: c.nRot, neox: c.neox, freqBase: 10000, freqScale: 0.5, useFactors: c.factors };
      const shape = { tokens: batch.length, heads: c.heads, kvHeads: c.kvHeads, headDim: c.hd, pageSize, maxPages, scale: 1 / Math.sqrt(c.hd), qStride: stride };
      const attention = new AttentionKernel(ctx, 'workgroup');
      const run = async (rotating: boolean, splits = 1) => {
        const bqkv = ctx.storage('qkv', qkv.byteLength, qkv);
        const bpos = ctx.storage('pos', positions.byteLength, positions);
        const bseq = ctx.storage('seq', seqs.byteLength, seqs);
        const bpages = ctx.storage('pages', pageTable.byteLength, pageTable);
        const bfac = ctx.storage('factors', factors.byteLength, factors);
        const kc = ctx.storage('k', past.byteLength, past);
        const vc = ctx.storage('v', pastV.byteLength, pastV);
        const out = ctx.storage('out', batch.length * qDim * 4);
        await runPass(ctx, (pass, arena) => {
          if (rotating && splits > 1) {
            const partials = ctx.storage('partials', AttentionKernel.partialsBytes(c.hd));
            attention.encode(pass, arena, attention.bindRope(bqkv, kc, vc, bpages, bpos, bseq, partials, bfac), { ...shape, rope, splits }, attention.bindCombine(partials, out));
          } else if (rotating) {
            attention.encode(pass, arena, attention.bindRope(bqkv, kc, vc, bpages, bpos, bseq, out, bfac), { ...shape, rope });
          } else {
            const store = new RopeKvStoreKernel(ctx, 'scalar');
            store.encode(pass, arena, store.bind(bqkv, bpos, bseq, bpages, bfac, kc, vc), { ...rope, tokens: batch.length, heads: c.heads, kvHeads: c.kvHeads, headDim: c.hd, tokenStride: stride, pageSize, maxPages });
            attention.encode(pass, arena, attention.bind(bqkv, kc, vc, bpages, bpos, bseq, out), shape);
          }
        });
        return { out: await readF32(ctx, out, batch.length * qDim), k: await readF32(ctx, kc, past.length), v: await readF32(ctx, vc, pastV.length) };
      };
      const want = await run(false);
      // Unsplit, and with positions split over 5 workgroups (the first sequence's single position leaves
      // four of its splits empty; one split stores each KV head's new row).
      for (const splits of [1, 5]) {
        const got = await run(true, splits);
        expect(maxRelError(got.out, want.out), `${splits} splits`).toBeLessThan(1e-5);
        // Every cache row: the new positions' K and V written as the pass writes them, the rest untouched.
        expect(maxRelError(got.k, want.k), `${splits} splits`).toBeLessThan(1e-6);
        expect(got.v, `${splits} splits`).toEqual(want.v);
      }
    });
  }

  it('is the GPU kernel over an f32 cache only, with f32 output', () => {
    expect(new AttentionKernel(ctx, 'serial').rotates(64)).toBe(false);
    expect(new AttentionKernel(ctx, 'workgroup', undefined, 'f32').rotates(62)).toBe(false);
    expect(() => new AttentionKernel(ctx, 'workgroup', undefined, 'f16')).toThrow(/serial/);
  });
});
