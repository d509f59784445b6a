/**
 * The adapter-limit probes (kernels/probes/) on the real adapter: each computes exactly what the CPU
 * computes, so their timings measure work that really happened. Sizes are small; no timing is asserted.
 */
import { describe, expect, it } from 'vitest';
import { measurePersistentProducts } from '../../kernels/probes/measure-persistent.ts';
import { EmptyProbe } from '../../kernels/probes/empty.ts';
import { FmaProbe, fmaReference } from '../../kernels/probes/fma.ts';
import { measureAdapterLimits } from '../../kernels/probes/limits.ts';
import { MATVEC_PROBE_TYPES, measureMatVec } from '../../kernels/probes/measure-matvec.ts';
import { measureDecodeAttention } from '../../kernels/probes/measure-attention.ts';
import { measureMatMul } from '../../kernels/probes/measure-matmul.ts';
import { patternDot } from '../../bench/limits.ts';
import { matvecVariant } from '../../kernels/matvec.ts';
import { typeName } from '../../ggml/types.ts';
import { STREAM_LAYOUTS, StreamReadProbe, type StreamLayout } from '../../kernels/probes/stream-read.ts';
import { readF32, readU32, runPass, testContext } from '../helpers/gpu.ts';
import { rng } from '../helpers/random.ts';
import { uploadWeights } from '../../kernels/runtime/weights.ts';

function randomWords(n: number, seed: number): Uint32Array {
  const r = rng(seed);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 2 ** 32);
  return out;
}

/** What invocation i of `invocations` XORs together under each layout, written out plainly. */
function expectedFolds(words: Uint32Array, layout: StreamLayout, invocations: number): Uint32Array {
  const vec4s = words.length / 4;
  const per = Math.ceil(vec4s / invocations);
  const out = new Uint32Array(invocations);
  for (let i = 0; i < invocations; i++) {
    const indices: number[] = [];
    if (layout === 'grid-stride') for (let j = i; j < vec4s; j += invocations) indices.push(j);
    else for (let j = i * per; j < Math.min((i + 1) * per, vec4s); j++) indices.push(j);
    let x = 0;
    for (const j of indices) x ^= words[4 * j] ^ words[4 * j + 1] ^ words[4 * j + 2] ^ words[4 * j + 3];
    out[i] = x >>> 0;
  }
  return out;
}

const orderedAtomics = (await testContext()).caps.orderedAtomics;

describe('adapter probes', () => {
  it('stream-read reads every vec4 once in each layout: per-invocation XORs and their total match the CPU', async () => {
    const ctx = await testContext();
    // Not a multiple of the invocations, so the last ranges are short or empty.
    const vec4s = 64 * 1024 + 37;
    const words = randomWords(vec4s * 4, 11);
    let total = 0;
    for (const w of words) total ^= w;
    const src = ctx.storage('src', words.byteLength, words);
    const store = uploadWeights(ctx.device, ctx.caps, 'src-weights', new Uint8Array(words.buffer));
    for (const layout of STREAM_LAYOUTS) {
      for (const workgroupSize of [32, 64]) {
        const workgroups = 7;
        const probe = new StreamReadProbe(ctx, layout, workgroupSize);
        const invocations = probe.invocations(workgroups);
        const out = ctx.storage('out', invocations * 4);
        await runPass(ctx, (pass, arena) => probe.encode(pass, arena, probe.bind(layout === 'weights' ? store : src, out), { vec4s, workgroups }));
        const got = await readU32(ctx, out, invocations);
        expect(got, `${layout}/${workgroupSize}`).toEqual(expectedFolds(words, layout, invocations));
        expect(got.reduce((x, w) => x ^ w, 0) >>> 0).toBe(total >>> 0);
      }
    }
  });

  it('fma runs every step of every chain: outputs equal the CPU, in closed form and step by step', async () => {
    const ctx = await testContext();
    for (const accumulators of [4, 8]) {
      const probe = new FmaProbe(ctx, accumulators, 32);
      const workgroups = 3;
      const invocations = probe.invocations(workgroups);
      const out = ctx.storage('out', invocations * 4);
      // a = a * 1 + 1 counts steps: each lane ends at its start + iters.
      const iters = 1000;
      await runPass(ctx, (pass, arena) => probe.encode(pass, arena, probe.bind(out), { iters, m: 1, c: 1, workgroups }));
      const counted = await readF32(ctx, out, invocations);
      for (let i = 0; i < invocations; i++) {
        const seed = i & 255;
        const want = 4 * accumulators * (seed + iters) + (accumulators * (accumulators - 1)) / 2 + 3 * accumulators;
        expect(counted[i], `invocation ${i}`).toBe(want);
      }
      // m = 0.5 keeps a * m exact in f32, so fused and unfused FMA agree with the reference bit for bit.
      await runPass(ctx, (pass, arena) => probe.encode(pass, arena, probe.bind(out), { iters: 9, m: 0.5, c: 0.25, workgroups }));
      const halved = await readF32(ctx, out, invocations);
      for (let i = 0; i < invocations; i++) expect(halved[i], `invocation ${i}`).toBe(fmaReference(i, accumulators, 9, 0.5, 0.25));
    }
  });

  it('the empty probe runs every dispatch of a long pass', async () => {
    const ctx = await testContext();
    const probe = new EmptyProbe(ctx);
    const n = 300;
    const out = ctx.storage('out', n * 4);
    const group = probe.bind(out);
    await runPass(ctx, (pass, arena) => {
      for (let i = 0; i < n; i++) probe.encode(pass, arena, group, { index: i, value: 1000 + i });
    }, n);
    expect(Array.from(await readU32(ctx, out, n))).toEqual(Array.from({ length: n }, (_, i) => 1000 + i));
  });

  it('measureAdapterLimits returns finite positive figures for every variant', async () => {
    const ctx = await testContext();
    const limits = await measureAdapterLimits(ctx.device, ctx.caps, { streamBytes: 2 * 2 ** 20, workgroups: 16, workgroupSizes: [32, 64], accumulators: [4], runs: 1, dispatches: 50, targetMs: 2 });
    const positive = (x: number) => Number.isFinite(x) && x > 0;
    expect(positive(limits.streamReadGBps) && positive(limits.fmaGflops) && positive(limits.dispatchUs) && positive(limits.roundTripUs)).toBe(true);
    expect(limits.streamReadBytes).toBe(2 * 2 ** 20);
    expect(limits.streamReadVariants).toHaveLength(STREAM_LAYOUTS.length * 2);
    expect(limits.fmaVariants).toHaveLength(2);
    for (const v of limits.streamReadVariants) expect(positive(v.GBps) && positive(v.ms) && v.reps >= 1).toBe(true);
    for (const v of limits.fmaVariants) expect(positive(v.gflops) && v.iters >= 16).toBe(true);
    expect(Math.max(...limits.streamReadVariants.map((v) => v.GBps))).toBe(limits.streamReadGBps);
    // Plain JSON: what the bench writes and doctor --json prints.
    expect(JSON.parse(JSON.stringify(limits))).toEqual(limits);
  });

  it('the matrix-vector probe checks each kernel\'s output and times every product of a shape', async () => {
    const ctx = await testContext();
    const shapes = [{ label: 'two shapes', products: [{ n: 70, k: 512, copies: 2 }, { n: 33, k: 256, copies: 3 }] }];
    for (const type of MATVEC_PROBE_TYPES) {
      const [rate] = await measureMatVec(ctx, type, matvecVariant(ctx.caps), shapes, (k) => patternDot(type, k), 1);
      expect(rate.type).toBe(typeName(type));
      expect(rate.dispatches).toBe(5);
      expect(rate.weightBytes).toBeGreaterThan(0);
      expect(Number.isFinite(rate.GBps) && rate.GBps > 0).toBe(true);
    }
    // A result that is not the product is refused before it is timed.
    await expect(measureMatVec(ctx, MATVEC_PROBE_TYPES[0], matvecVariant(ctx.caps), shapes, (k) => patternDot(MATVEC_PROBE_TYPES[0], k) + 1, 1)).rejects.toThrow(/did not do the whole product/);
  });

  // llvmpipe only: its atomics order the stores before them and the engine knows (and pins) its threads.
  it.skipIf(!orderedAtomics)('the persistent products probe gives the bits of one dispatch a product, every barrier holding its workgroups until all arrive', async () => {
    const ctx = await testContext();
    const products = [{ n: 576, k: 576, copies: 3 }, { n: 192, k: 576, copies: 2 }, { n: 300, k: 1536, copies: 2 }];
    for (const workgroups of [1, 2]) {
      const r = await measurePersistentProducts(ctx, workgroups, products, 1);
      expect(r).toMatchObject({ type: 'Q8_0', products: 7, workgroups, sameBits: true, failedBarriers: 0, fewestArrivals: workgroups });
      expect(r.dispatchMs > 0 && r.persistentMs > 0).toBe(true);
    }
  });

  it('the decode attention probe times each split count after checking its output against one workgroup a pair', async () => {
    const ctx = await testContext();
    const shape = { label: 'small', heads: 4, kvHeads: 2, headDim: 16, layers: 2 };
    const rows = await measureDecodeAttention(ctx, shape, 2, 200, [3, 1, 8], 1);
    expect(rows.map((r) => r.splits)).toEqual([1, 3, 8]);
    expect(rows.map((r) => r.dispatches)).toEqual([2, 4, 4]);
    for (const r of rows) {
      expect(r.kvBytes).toBe(2 * 2 * 200 * 2 * 16 * 4 * 2);
      expect(r.ms).toBeGreaterThan(0);
      expect(r.GBps).toBeCloseTo(r.kvBytes / r.ms / 1e6);
    }
  });

  it('the prefill product probe checks each tiled kernel\'s first and last outputs and times every product', async () => {
    const ctx = await testContext();
    const type = MATVEC_PROBE_TYPES[0];
    const shapes = [{ label: 'small', n: 200, k: 256, copies: 2 }];
    for (const variant of ['tiles', 'tiles-vec4'] as const) {
      const [rate] = await measureMatMul(ctx, type, variant, shapes, 40, (k) => patternDot(type, k), 1);
      expect(rate).toMatchObject({ variant, tokens: 40, dispatches: 2 });
      expect(rate.gflop).toBeCloseTo((2 * 40 * 200 * 256 * 2) / 1e9);
      expect(rate.GFLOPs).toBeGreaterThan(0);
    }
    await expect(measureMatMul(ctx, type, 'tiles-vec4', shapes, 40, (k) => patternDot(type, k) + 1, 1)).rejects.toThrow(/did not do the whole product/);
  });
});
