/**
 * The KV cache's 'f16' format (kernels/kv-format.ts): the CPU vec4 RoPE/KV-store kernel writes each K and V
 * value rounded to the nearest half (Q exactly as with an f32 cache), and the vec4 attention kernels
 * reading it compute exactly what they compute over an f32 cache holding those rounded values.
 */
import { describe, expect, it } from 'vitest';
import { floatToHalf, halfToFloat } from '../../engine/gguf/quant/half.ts';
import { AttentionKernel } from '../../kernels/attention.ts';
import { kvFormatFor } from '../../kernels/kv-format.ts';
import { COMPAT_CAPS } from '../../kernels/runtime/caps.ts';
import { RopeKvStoreKernel } from '../../kernels/rope-kv-store.ts';
import { readBuffer, readF32, runPass, testContext } from '../helpers/gpu.ts';
import { randomF32 } from '../helpers/random.ts';

const ctx = await testContext();

/** Packed halves (two to a word, low first) as floats. */
function unpackHalves(buf: ArrayBuffer): Float32Array {
  const h = new Uint16Array(buf);
  return Float32Array.from(h, halfToFloat);
}

describe('f16 KV cache', () => {
  it.each([
    { name: 'normal order, GQA', heads: 4, kvHeads: 2, hd: 16, nRot: 16, neox: false },
    { name: 'NeoX, partial rotary', heads: 2, kvHeads: 1, hd: 32, nRot: 16, neox: true },
  ])('rope-kv-store writes K and V rounded to the nearest half, Q as with an f32 cache ($name)', async (c) => {
    const qDim = c.heads * c.hd;
    const kvDim = c.kvHeads * c.hd;
    const stride = qDim + 2 * kvDim;
    const [pageSize, maxPages, numPages] = [4, 4, 8];
    const batch = [
      { seq: 0, pos: 0 },
      { seq: 0, pos: 5 },
      { seq: 1, pos: 13 },
    ];
    const pageTable = Uint32Array.from({ length: 2 * maxPages }, (_, i) => (i * 3) % numPages);
    const qkv = randomF32(batch.length * stride, 7, 3);
    const run = async (kv: 'f32' | 'f16') => {
      const bqkv = ctx.storage('qkv', qkv.byteLength, qkv);
      const cacheBytes = numPages * pageSize * kvDim * (kv === 'f16' ? 2 : 4);
      const [kc, vc] = [ctx.storage('k', cacheBytes), ctx.storage('v', cacheBytes)];
      const k = new RopeKvStoreKernel(ctx, 'vec4', kv);
      await runPass(ctx, (pass, arena) =>
        k.encode(pass, arena, k.bind(bqkv, ctx.storage('pos', 12, Uint32Array.from(batch.map((b) => b.pos))), ctx.storage('seq', 12, Uint32Array.from(batch.map((b) => b.seq))), ctx.storage('pages', pageTable.byteLength, pageTable), ctx.storage('f', 16, new Float32Array([1, 1, 1, 1])), kc, vc), {
          tokens: batch.length,
          heads: c.heads,
          kvHeads: c.kvHeads,
          headDim: c.hd,
          nRot: c.nRot,
          neox: c.neox,
          freqBase: 10000,
          freqScale: 1,
          useFactors: false,
          tokenStride: stride,
          pageSize,
          maxPages,
        }),
      );
      const read = async (b: GPUBuffer) => (kv === 'f16' ? unpackHalves(await readBuffer(ctx, b)) : await readF32(ctx, b, cacheBytes / 4));
      return { q: await readF32(ctx, bqkv, qkv.length), k: await read(kc), v: await read(vc) };
    };
    const f32 = await run('f32');
    const f16 = await run('f16');
    expect(f16.q).toEqual(f32.q);
    const rounded = (xs: Float32Array) => Float32Array.from(xs, (x) => halfToFloat(floatToHalf(x)));
    expect(f16.k).toEqual(rounded(f32.k));
    expect(f16.v).toEqual(rounded(f32.v));
    expect(f32.k.some((x, i) => x !== 0 && x !== f16.k[i])).toBe(true);
  });

  it.each([1, 24])('attention over the f16 cache equals attention over an f32 cache of the same values (%i tokens)', async (tokens) => {
    const [heads, kvHeads, hd, pageSize, maxPages] = [9, 3, 64, 16, 8];
    const kvDim = kvHeads * hd;
    const values = maxPages * pageSize * kvDim;
    const halves = (seed: number) => Uint16Array.from(randomF32(values, seed), (x) => floatToHalf(x));
    const [kh, vh] = [halves(31), halves(32)];
    const pages = ctx.storage('pages', maxPages * 4, Uint32Array.from({ length: maxPages }, (_, i) => (i * 5) % maxPages));
    const pos = ctx.storage('pos', tokens * 4, Uint32Array.from({ length: tokens }, (_, t) => 90 + t));
    const seq = ctx.storage('seq', tokens * 4, new Uint32Array(tokens));
    const q = ctx.storage('q', tokens * heads * hd * 4, randomF32(tokens * heads * hd, 33, 1));
    const out: Float32Array[] = [];
    for (const kv of ['f16', 'f32'] as const) {
      const cache = (h: Uint16Array) => (kv === 'f16' ? ctx.storage('c', h.byteLength, h) : ctx.storage('c', h.length * 4, Float32Array.from(h, halfToFloat)));
      const att = new AttentionKernel(ctx, 'serial', undefined, kv);
      const o = ctx.storage('out', tokens * heads * hd * 4);
      await runPass(ctx, (pass, arena) => att.encode(pass, arena, att.bind(q, cache(kh), cache(vh), pages, pos, seq, o), { tokens, heads, kvHeads, headDim: hd, pageSize, maxPages, scale: 0.125 }));
      out.push(await readF32(ctx, o, tokens * heads * hd));
    }
    expect(out[0]).toEqual(out[1]);
    expect(out[0].some((x) => x !== 0)).toBe(true);
  });

  it('is chosen on CPU rasterisers for heads of whole vec4 pairs only, and refused where it cannot be had', () => {
    const cpu = { ...COMPAT_CAPS, software: true };
    const gpu = { ...COMPAT_CAPS, software: false };
    expect(kvFormatFor(cpu, { headDim: 64, nRot: 64 })).toBe('f16');
    expect(kvFormatFor(cpu, { headDim: 64, nRot: 64 }, 'f32')).toBe('f32');
    expect(kvFormatFor(cpu, { headDim: 12, nRot: 12 })).toBe('f32');
    expect(kvFormatFor(gpu, { headDim: 64, nRot: 64 })).toBe('f32');
    expect(() => kvFormatFor(gpu, { headDim: 64, nRot: 64 }, 'f16')).toThrow(/CPU rasterisers' kernels only/);
    expect(() => kvFormatFor(cpu, { headDim: 12, nRot: 12 }, 'f16')).toThrow(/multiples of 8 \(this model: 12 and 12\)/);
    expect(() => new RopeKvStoreKernel(ctx, 'scalar', 'f16')).toThrow(/vec4 kernel only/);
    expect(() => new AttentionKernel(ctx, 'workgroup', undefined, 'f16')).toThrow(/serial \(CPU\) kernels only/);
  });
});
