import { describe, expect, it } from 'vitest';
import { AttentionKernel } from '../../kernels/attention.ts';
import { KvStoreKernel } from '../../kernels/kv-store.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

/**
 * Two sequences share a paged cache with scattered pages. Sequence 0 already holds `past` positions; a
 * batch of new tokens from both sequences is stored and attended to in one pass, as in batched decode
 * and chunked prefill.
 */
function attentionRef(q: Float32Array, keys: Float32Array[], values: Float32Array[], heads: number, kvHeads: number, hd: number, scale: number, window = 0): Float32Array {
  const out = new Float32Array(heads * hd);
  const group = heads / kvHeads;
  const first = window > 0 ? Math.max(0, keys.length - window) : 0;
  for (let h = 0; h < heads; h++) {
    const kh = Math.floor(h / group);
    const scores: number[] = [];
    for (let p = first; p < keys.length; p++) {
      let d = 0;
      for (let i = 0; i < hd; i++) d += q[h * hd + i] * keys[p][kh * hd + i];
      scores.push(d * scale);
    }
    const m = Math.max(...scores);
    const w = scores.map((s) => Math.exp(s - m));
    const sum = w.reduce((a, b) => a + b, 0);
    for (let i = 0; i < hd; i++) {
      let acc = 0;
      for (let j = 0; j < w.length; j++) acc += w[j] * values[first + j][kh * hd + i];
      out[h * hd + i] = acc / sum;
    }
  }
  return out;
}

// The serial kernel walks positions in chunks under llvmpipe's loop cap; 7-position chunks check the seams.
// Head dimensions that are multiples of 4 run its vec4 kernel, dim 6 the scalar one.
describe.each([
  ['workgroup', undefined],
  ['serial', undefined],
  ['serial', 7],
] as const)('paged KV store + attention kernels (%s, position chunk %s)', (variant, posChunk) => {
  for (const { heads, kvHeads, hd, pageSize, past0, new0, new1, window } of [
    { heads: 8, kvHeads: 4, hd: 8, pageSize: 16, past0: 5, new0: 1, new1: 3, window: 0 },
    { heads: 4, kvHeads: 1, hd: 64, pageSize: 4, past0: 150, new0: 2, new1: 70, window: 0 },
    { heads: 6, kvHeads: 2, hd: 128, pageSize: 16, past0: 40, new0: 3, new1: 1, window: 0 },
    { heads: 4, kvHeads: 2, hd: 16, pageSize: 8, past0: 60, new0: 2, new1: 30, window: 16 },
    // Not a multiple of 4: the serial variant falls back from its vec4 kernel to the scalar one.
    { heads: 4, kvHeads: 2, hd: 6, pageSize: 8, past0: 20, new0: 2, new1: 5, window: 0 },
  ]) {
    it(`matches the reference: ${heads}/${kvHeads} heads, dim ${hd}, pages of ${pageSize}${window ? `, window ${window}` : ''}`, async () => {
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
      const att = new AttentionKernel(ctx, variant, posChunk);
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
        att.encode(pass, arena, att.bind(bq, kCache, vCache, bPages, b.pos, b.seq, bOut), { tokens: batch.length, heads, kvHeads, headDim: hd, pageSize, maxPages, scale, window });
      });
      const out = await readF32(ctx, bOut, batch.length * qDim);
      batch.forEach((it, t) => {
        const want = attentionRef(q.subarray(t * qDim, (t + 1) * qDim), keys[it.seq].slice(0, it.pos + 1), vals[it.seq].slice(0, it.pos + 1), heads, kvHeads, hd, scale, window);
        expect(maxRelError(out.subarray(t * qDim, (t + 1) * qDim), want), `token ${t} (seq ${it.seq}, pos ${it.pos})`).toBeLessThan(1e-4);
      });
    });
  }
});
