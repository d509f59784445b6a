import { describe, expect, it } from 'vitest';
import { PenaltiesKernel, writePenaltyEntry, writePenaltyRow, PENALTY_ENTRY_BYTES, PENALTY_ROW_BYTES } from '../../kernels/sampling/penalties.ts';
import { NO_TOKEN, SampleKernel, SAMPLE_ROW_BYTES, samplePartialsBytes, writeSampleRow } from '../../kernels/sampling/sample.ts';
import { SoftmaxKernel } from '../../kernels/sampling/softmax.ts';
import { readTopKRow, TopKKernel, TOPK_MAX, TOPK_ROW_WORDS } from '../../kernels/sampling/topk.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { readBuffer, readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

type RowSetting = { temperature: number; seed: number; counter: number; useMask: boolean };

function settingsBuffer(ctx: KernelContext, rows: RowSetting[]): GPUBuffer {
  const u32 = new Uint32Array((rows.length * SAMPLE_ROW_BYTES) / 4);
  const f32 = new Float32Array(u32.buffer);
  rows.forEach((r, i) => writeSampleRow(u32, f32, i, r));
  return ctx.storage('settings', u32.byteLength, u32);
}

function maskOf(vocab: number, rows: ((i: number) => boolean)[]): { words: number; data: Uint32Array } {
  const words = Math.ceil(vocab / 32);
  const data = new Uint32Array(rows.length * words);
  rows.forEach((allow, r) => {
    for (let i = 0; i < vocab; i++) if (allow(i)) data[r * words + (i >> 5)] |= 1 << (i & 31);
  });
  return { words, data };
}

function logSumExp(v: number[]): number {
  const m = v.reduce((a, x) => Math.max(a, x), -Infinity);
  return m + Math.log(v.reduce((a, x) => a + Math.exp(x - m), 0));
}

async function sample(ctx: KernelContext, logits: Float32Array, vocab: number, rows: RowSetting[], mask: { words: number; data: Uint32Array }) {
  const k = new SampleKernel(ctx);
  const bl = ctx.storage('logits', logits.byteLength, logits);
  const bm = ctx.storage('mask', mask.data.byteLength, mask.data);
  const out = ctx.storage('out', rows.length * 8);
  const partials = ctx.storage('partials', samplePartialsBytes(rows.length, vocab));
  await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.bind(bl, bm, settingsBuffer(ctx, rows), partials, out), { rows: rows.length, vocab, logitsStride: vocab, maskWords: mask.words }));
  const raw = await readBuffer(ctx, out, rows.length * 8);
  const u = new Uint32Array(raw);
  const f = new Float32Array(raw);
  return rows.map((_, r) => ({ token: u[2 * r], logprob: f[2 * r + 1] }));
}

describe('sample kernel', () => {
  it('greedy picks the argmax (first on ties) and reports its log-probability', async () => {
    const ctx = await testContext();
    const vocab = 1000;
    const logits = randomF32(3 * vocab, 21, 5);
    logits[vocab + 10] = 9;
    logits[vocab + 500] = 9; // tie: the lower id wins
    const mask = maskOf(vocab, [() => true, () => true, (i) => i % 7 === 3]);
    const got = await sample(ctx, logits, vocab, [0, 1, 2].map((r) => ({ temperature: 0, seed: 1, counter: 0, useMask: r === 2 })), mask);
    for (let r = 0; r < 3; r++) {
      const row = Array.from(logits.subarray(r * vocab, (r + 1) * vocab));
      const allowedIdx = row.map((_, i) => i).filter((i) => r !== 2 || i % 7 === 3);
      let best = allowedIdx[0];
      for (const i of allowedIdx) if (row[i] > row[best]) best = i;
      expect(got[r].token).toBe(best);
      expect(got[r].logprob).toBeCloseTo(row[best] - logSumExp(allowedIdx.map((i) => row[i])), 4);
    }
    expect(got[1].token).toBe(10);
  });

  it('greedy over a large vocabulary split into many chunks finds the last-chunk maximum and the first of tied ids', async () => {
    const ctx = await testContext();
    const vocab = 40001; // 157 chunks of 256, over three workgroups; the last chunk holds one token
    const logits = randomF32(2 * vocab, 77, 5);
    logits[40000] = 50; // row 0: the very last token wins
    logits[vocab + 300] = 40; // row 1: a tie across chunks goes to the lower id
    logits[vocab + 39000] = 40;
    const got = await sample(ctx, logits, vocab, [0, 1].map(() => ({ temperature: 0, seed: 0, counter: 0, useMask: false })), maskOf(vocab, [() => true, () => true]));
    expect(got.map((g) => g.token)).toEqual([40000, 300]);
  });

  it('returns NO_TOKEN when the mask allows nothing', async () => {
    const ctx = await testContext();
    const got = await sample(ctx, randomF32(64, 1), 64, [{ temperature: 0.8, seed: 3, counter: 0, useMask: true }], maskOf(64, [() => false]));
    expect(got[0].token).toBe(NO_TOKEN);
  });

  it('temperature sampling follows softmax(logits / T), is reproducible per seed and never leaves the mask', async () => {
    const ctx = await testContext();
    const vocab = 16;
    const base = Float32Array.from([2, 1.5, 1, 0.5, 0, -0.5, -1, -2, -3, -4, 1.2, 0.3, -0.2, -1.5, 0.8, 1.9]);
    const T = 0.7;
    const N = 2000; // independent draws: one row per draw, each with its own counter
    const logits = new Float32Array(N * vocab);
    for (let r = 0; r < N; r++) logits.set(base, r * vocab);
    const rows = Array.from({ length: N }, (_, r) => ({ temperature: T, seed: 1234, counter: r, useMask: true }));
    const mask = maskOf(vocab, Array.from({ length: N }, () => (i: number) => i !== 0));
    const a = await sample(ctx, logits, vocab, rows, mask);
    const b = await sample(ctx, logits, vocab, rows, mask);
    expect(a.map((x) => x.token)).toEqual(b.map((x) => x.token));
    const z = Array.from(base, (l, i) => (i === 0 ? -Infinity : l / T));
    const lse = logSumExp(z.filter(Number.isFinite));
    const counts = new Array(vocab).fill(0);
    for (const x of a) counts[x.token]++;
    expect(counts[0]).toBe(0);
    // Chi-square goodness of fit, 14 degrees of freedom: 99.9th percentile is 36.1.
    let chi2 = 0;
    for (let i = 1; i < vocab; i++) {
      const expected = N * Math.exp(z[i] - lse);
      chi2 += (counts[i] - expected) ** 2 / expected;
    }
    expect(chi2).toBeLessThan(36.1);
    for (const x of a) expect(x.logprob).toBeCloseTo(z[x.token] - lse, 4);
  });
});

const loopBudgeted = Number.isFinite((await testContext()).caps.loopBudget);

describe('top-k kernel', () => {
  it('returns exactly the K best allowed tokens and the log-sum-exp', async () => {
    const ctx = await testContext();
    // 262144 (Gemma 3's vocabulary) takes 61 534 of llvmpipe's 65 535 loop passes an invocation.
    for (const vocab of [50, 3000, 32000, 262144]) {
      const logits = randomF32(2 * vocab, vocab, 8);
      const mask = maskOf(vocab, [() => true, (i) => i % 3 !== 0]);
      const rows = [{ temperature: 0, seed: 0, counter: 0, useMask: false }, { temperature: 0.5, seed: 0, counter: 0, useMask: true }];
      const k = new TopKKernel(ctx);
      const bl = ctx.storage('logits', logits.byteLength, logits);
      const bm = ctx.storage('mask', mask.data.byteLength, mask.data);
      const out = ctx.storage('out', 2 * TOPK_ROW_WORDS * 4);
      await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.bind(bl, bm, settingsBuffer(ctx, rows), out), { rows: 2, vocab, logitsStride: vocab, maskWords: mask.words }));
      const raw = await readBuffer(ctx, out, 2 * TOPK_ROW_WORDS * 4);
      for (let r = 0; r < 2; r++) {
        const got = readTopKRow(new Uint32Array(raw), new Float32Array(raw), r);
        const T = r === 0 ? 1 : 0.5;
        const cand = Array.from({ length: vocab }, (_, i) => i).filter((i) => r === 0 || i % 3 !== 0);
        const sorted = cand.map((i) => [i, logits[r * vocab + i] / T] as const).sort((x, y) => y[1] - x[1] || x[0] - y[0]);
        const want = sorted.slice(0, Math.min(TOPK_MAX, cand.length));
        expect(got.tokens, `vocab ${vocab} row ${r}`).toEqual(want.map((w) => w[0]));
        expect(maxRelError(got.values, want.map((w) => w[1]))).toBeLessThan(1e-6);
        expect(got.logSumExp).toBeCloseTo(logSumExp(sorted.map((s) => s[1])), 3);
      }
    }
  });
  it.skipIf(!loopBudgeted)('refuses a vocabulary whose walks would outrun llvmpipe’s loop budget', async () => {
    const ctx = await testContext();
    const vocab = 300000;
    const k = new TopKKernel(ctx);
    const out = ctx.storage('out', TOPK_ROW_WORDS * 4);
    const logits = ctx.storage('logits', vocab * 4);
    const mask = maskOf(vocab, [() => true]);
    const group = k.bind(logits, ctx.storage('mask', mask.data.byteLength, mask.data), settingsBuffer(ctx, [{ temperature: 1, seed: 0, counter: 0, useMask: false }]), out);
    await expect(runPass(ctx, (pass, arena) => k.encode(pass, arena, group, { rows: 1, vocab, logitsStride: vocab, maskWords: mask.words }))).rejects.toThrow(
      /topk over a vocabulary of 300000 needs 70414 loop iterations in one shader invocation/,
    );
  });
});

describe('penalties kernel', () => {
  it('applies repetition, presence and frequency penalties like llama.cpp', async () => {
    const ctx = await testContext();
    const vocab = 20;
    const logits = Float32Array.from({ length: 2 * vocab }, (_, i) => (i % vocab) - 10);
    const entries: [number, number, number, boolean][] = [
      [0, 3, 2, true], // row 0 token 3: generated twice, in window
      [0, 15, 0, true], // prompt-only token in window
      [0, 16, 1, false], // generated once, out of window
      [1, 4, 5, false],
    ];
    const eu = new Uint32Array((entries.length * PENALTY_ENTRY_BYTES) / 4);
    entries.forEach(([, tok, cnt, win], i) => writePenaltyEntry(eu, i, tok, cnt, win));
    const ru = new Uint32Array((2 * PENALTY_ROW_BYTES) / 4);
    const rf = new Float32Array(ru.buffer);
    writePenaltyRow(ru, rf, 0, { start: 0, count: 3, presence: 0.5, frequency: 0.25, repetition: 1.3 });
    writePenaltyRow(ru, rf, 1, { start: 3, count: 1, presence: 1, frequency: 0.1, repetition: 1 });
    const k = new PenaltiesKernel(ctx);
    const bl = ctx.storage('logits', logits.byteLength, logits);
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.bind(bl, ctx.storage('e', eu.byteLength, eu), ctx.storage('r', ru.byteLength, ru)), { rows: 2, logitsStride: vocab }));
    const got = await readF32(ctx, bl, 2 * vocab);
    const want = logits.slice();
    want[3] = (3 - 10) * 1.3 - 0.5 - 0.25 * 2;
    want[15] = (15 - 10) / 1.3;
    want[16] = 16 - 10 - 0.5 - 0.25;
    want[vocab + 4] = 4 - 10 - 1 - 0.1 * 5;
    expect(maxRelError(got, want)).toBeLessThan(1e-6);
  });
});

describe('softmax kernel', () => {
  it('matches softmax(x / T) per row', async () => {
    const ctx = await testContext();
    const n = 777;
    const x = randomF32(2 * n, 8, 10);
    const k = new SoftmaxKernel(ctx);
    const bx = ctx.storage('x', x.byteLength, x);
    const by = ctx.storage('y', x.byteLength);
    await runPass(ctx, (pass, arena) => k.encode(pass, arena, k.bind(bx, by), { rows: 2, n, temperature: 0.5 }));
    const got = await readF32(ctx, by, 2 * n);
    const want = new Float32Array(2 * n);
    for (let r = 0; r < 2; r++) {
      const z = Array.from(x.subarray(r * n, (r + 1) * n), (v) => v / 0.5);
      const lse = logSumExp(z);
      z.forEach((v, i) => (want[r * n + i] = Math.exp(v - lse)));
    }
    expect(maxRelError(got, want)).toBeLessThan(1e-5);
  });
});
