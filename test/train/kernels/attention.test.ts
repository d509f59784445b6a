/** The training attention kernels against the reference: packed sequences, causal, grouped-query heads. */
import { describe, expect, it } from 'vitest';
import { TrainAttentionKernels } from '../../../kernels/train/attention.ts';
import { runPass, testContext } from '../../helpers/gpu.ts';
import * as ref from '../reference.ts';
import { f32, read, relError, u32, zeros } from './io.ts';

/** Runs the three kernels over packed sequences (`spans`: [first, end) per token) and returns each output's relative error against the reference. */
async function attentionErrors(heads: number, kvHeads: number, hd: number, spans: [number, number][]) {
  const ctx = await testContext();
  const k = new TrainAttentionKernels(ctx, hd);
  const T = spans.length;
  const a = { heads, kvHeads, headDim: hd, spans };
  const q = ref.random(T * heads * hd, 1, 2);
  const kk = ref.random(T * kvHeads * hd, 2, 2);
  const v = ref.random(T * kvHeads * hd, 3);
  const dout = ref.random(T * heads * hd, 4);
  const want = ref.attention(q, kk, v, a);
  const grads = ref.attentionBackward(q, kk, v, dout, a);
  const [qb, kb, vb, db, sb] = [f32(ctx, q), f32(ctx, kk), f32(ctx, v), f32(ctx, dout), u32(ctx, spans.flat())];
  const [ob, stb, dqb, dkb, dvb] = [zeros(ctx, q.length), zeros(ctx, 2 * T * heads), zeros(ctx, q.length), zeros(ctx, kk.length), zeros(ctx, v.length)];
  const p = { tokens: T, heads, kvHeads };
  await runPass(ctx, (pass, arena) => {
    k.encode(pass, arena, 'forward', k.forward.bind([qb, kb, vb, sb, ob, stb]), p);
    k.encode(pass, arena, 'backwardQ', k.backwardQ.bind([qb, kb, vb, sb, ob, db, stb, dqb]), p);
    k.encode(pass, arena, 'backwardKv', k.backwardKv.bind([qb, kb, vb, sb, db, stb, dkb, dvb]), p);
  });
  const stats = await read(ctx, stb, 2 * T * heads);
  return {
    out: relError(await read(ctx, ob, q.length), want.out),
    lse: relError(stats.filter((_, i) => i % 2 === 0), want.lse),
    dq: relError(await read(ctx, dqb, q.length), grads.dq),
    dk: relError(await read(ctx, dkb, kk.length), grads.dk),
    dv: relError(await read(ctx, dvb, v.length), grads.dv),
  };
}

describe('train-attention', () => {
  for (const [heads, kvHeads, hd] of [
    [4, 2, 8],
    [3, 3, 5],
    [8, 1, 16],
  ]) {
    it(`${heads} heads over ${kvHeads} KV heads of ${hd}: output, log-sum-exp, dQ, dK, dV`, async () => {
      // Three sequences of 7, 1 and 12 tokens packed together.
      const spans: [number, number][] = [];
      for (const [s, e] of [
        [0, 7],
        [7, 8],
        [8, 20],
      ])
        for (let t = s; t < e; t++) spans.push([s, e]);
      for (const [name, e] of Object.entries(await attentionErrors(heads, kvHeads, hd, spans))) expect(e, name).toBeLessThan(1e-5);
    });
  }

  // A head of 64 vec4s is past what the shader compiler unrolls; written as a loop inside the loop over
  // keys it cost llvmpipe 129 loop passes a key, and 600 keys ran out its loop budget
  // (runtime/loop-budget.ts): output 0.22 and dV 1.0 away from the reference.
  // Its first compile is long with an empty Mesa shader cache, as on a fresh CI machine: written out in
  // full, the head took llvmpipe 242 s on a 2-core Zen 4 host at 512-bit vectors and timed out past 600 s
  // on a Zen 5; in chunks of 16 vec4s (on CPU rasterisers) 79 s there; 2.5 s once cached.
  it('a head of 256 over one 600-token sequence', async () => {
    const ctx = await testContext();
    const T = 600;
    const kernels = new TrainAttentionKernels(ctx, 256);
    expect(() => kernels.checkSequenceTokens(ctx.caps, T, 1, 1)).not.toThrow();
    // Where the head is chunked (4 chunks of 16 vec4s), each key costs the key/value kernel two loops over them.
    if (ctx.caps.software) expect(kernels.loopPasses(1000, 1, 1)).toBe(1000 * (3 + 2 * 5) + 8 * 65 + 16);
    const spans = Array.from({ length: T }, (): [number, number] => [0, T]);
    for (const [name, e] of Object.entries(await attentionErrors(1, 1, 256, spans))) expect(e, name).toBeLessThan(1e-5);
  }, 600_000);

  it('refuses sequences whose loops would outrun the adapter’s loop budget', async () => {
    const ctx = await testContext();
    const k = new TrainAttentionKernels(ctx, 64);
    // SmolLM2's 9 heads over 3 KV heads: 5 passes a token in the key/value kernel.
    expect(k.loopPasses(1000, 9, 3)).toBe(1000 * 5 + 8 * 17 + 16);
    const caps = { ...ctx.caps, loopBudget: 65535 };
    expect(() => k.checkSequenceTokens(caps, 13000, 9, 3)).not.toThrow();
    expect(() => k.checkSequenceTokens(caps, 14000, 9, 3)).toThrow(/training attention over a sequence of 14000 tokens \(lower maxTokens\) needs 70152 loop iterations/);
  });
});
