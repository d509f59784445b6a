/**
 * The fused RoPE + KV-store epilogue does exactly what RopeKernel then KvStoreKernel do: the same Q in
 * place and the same K and V rows in the cache, bit for bit, on scattered pages of two sequences; both
 * its scalar kernel and the vec4 one CPU adapters take.
 */
import { describe, expect, it } from 'vitest';
import { KvStoreKernel } from '../../kernels/kv-store.ts';
import { RopeKvStoreKernel } from '../../kernels/rope-kv-store.ts';
import { RopeKernel } from '../../kernels/rope.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { randomF32 } from '../helpers/random.ts';

describe('rope + kv-store epilogue', () => {
  const cases = [
    { name: 'normal order, GQA', heads: 4, kvHeads: 2, hd: 16, nRot: 16, neox: false, factors: false },
    { name: 'NeoX order', heads: 3, kvHeads: 3, hd: 32, nRot: 32, neox: true, factors: false },
    { name: 'partial rotary (NeoX)', heads: 2, kvHeads: 1, hd: 32, nRot: 16, neox: true, factors: false },
    { name: 'partial rotary (normal)', heads: 2, kvHeads: 1, hd: 32, nRot: 8, neox: false, factors: false },
    { name: 'frequency factors', heads: 2, kvHeads: 2, hd: 16, nRot: 16, neox: false, factors: true },
  ];
  for (const c of cases.flatMap((c) => (['scalar', 'vec4'] as const).map((variant) => ({ ...c, variant })))) {
    it(`equals rope then kv-store (${c.name}, ${c.variant} kernel)`, async () => {
      const ctx = await testContext();
      const qDim = c.heads * c.hd;
      const kvDim = c.kvHeads * c.hd;
      // A padded row stride, as the workspace uses.
      const stride = qDim + 2 * kvDim + 4;
      const pageSize = 4;
      const maxPages = 8;
      const numPages = 16;
      const batch = [
        { seq: 0, pos: 0 },
        { seq: 0, pos: 9 },
        { seq: 1, pos: 3 },
        { seq: 1, pos: 30 },
        { seq: 0, pos: 2047 % (maxPages * pageSize) },
      ];
      const pageTable = new Uint32Array(2 * maxPages);
      for (let i = 0; i < maxPages; i++) {
        pageTable[i] = numPages - 1 - 2 * i;
        pageTable[maxPages + i] = 2 * i;
      }
      const qkv = randomF32(batch.length * stride, 21, 2);
      const factors = c.factors ? Float32Array.from({ length: c.nRot / 2 }, (_, i) => 1 + i * 0.5) : new Float32Array([1]);
      const positions = Uint32Array.from(batch.map((b) => b.pos));
      const seqs = Uint32Array.from(batch.map((b) => b.seq));
      const cacheBytes = numPages * pageSize * kvDim * 4;
      const run = async (fused: 'scalar' | 'vec4' | false) => {
        const bqkv = ctx.storage('qkv', qkv.byteLength, qkv);
        const bpos = ctx.storage('pos', positions.byteLength, positions);
        const bseq = ctx.storage('seq', seqs.byteLength, seqs);
        const bpages = ctx.storage('pages', pageTable.byteLength, pageTable);
        const bfac = ctx.storage('factors', factors.byteLength, factors);
        const kc = ctx.storage('k', cacheBytes);
        const vc = ctx.storage('v', cacheBytes);
        const rope = { tokens: batch.length, headDim: c.hd, nRot: c.nRot, neox: c.neox, freqBase: 10000, freqScale: 0.5, useFactors: c.factors };
        await runPass(ctx, (pass, arena) => {
          if (fused) {
            const k = new RopeKvStoreKernel(ctx, fused);
            k.encode(pass, arena, k.bind(bqkv, bpos, bseq, bpages, bfac, kc, vc), { ...rope, heads: c.heads, kvHeads: c.kvHeads, tokenStride: stride, pageSize, maxPages });
          } else {
            const r = new RopeKernel(ctx);
            r.encode(pass, arena, r.bind(bqkv, bpos, bfac), { ...rope, heads: c.heads + c.kvHeads, tokenStride: stride });
            const s = new KvStoreKernel(ctx);
            s.encode(pass, arena, s.bind(bqkv, bqkv, bpos, bseq, bpages, kc, vc), { tokens: batch.length, kvDim, pageSize, maxPages, kOffset: qDim, vOffset: qDim + kvDim, srcStride: stride });
          }
        });
        const q = await readF32(ctx, bqkv, qkv.length);
        return {
          q: Array.from({ length: batch.length }, (_, t) => Array.from(q.subarray(t * stride, t * stride + qDim))),
          k: Array.from(await readF32(ctx, kc, cacheBytes / 4)),
          v: Array.from(await readF32(ctx, vc, cacheBytes / 4)),
        };
      };
      const want = await run(false);
      const got = await run(c.variant);
      expect(got.q).toEqual(want.q);
      expect(got.k).toEqual(want.k);
      expect(got.v).toEqual(want.v);
      // The inputs really were rotated and stored: not a pair of no-ops agreeing.
      expect(got.k.some((x) => x !== 0)).toBe(true);
      expect(got.q[1]).not.toEqual(Array.from(qkv.subarray(stride, stride + qDim)));
    });
  }
});
