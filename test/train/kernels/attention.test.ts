/** The training attention kernels against the reference: packed sequences, causal, grouped-query heads. */
import { describe, expect, it } from 'vitest';
import { TrainAttentionKernels } from '../../../kernels/train/attention.ts';
import { runPass, testContext } from '../../helpers/gpu.ts';
import * as ref from '../reference.ts';
import { f32, read, relError, u32, zeros } from './io.ts';

describe('train-attention', () => {
  for (const [heads, kvHeads, hd] of [
    [4, 2, 8],
    [3, 3, 5],
    [8, 1, 16],
  ]) {
    it(`${heads} heads over ${kvHeads} KV heads of ${hd}: output, log-sum-exp, dQ, dK, dV`, async () => {
      const ctx = await testContext();
      const k = new TrainAttentionKernels(ctx, hd);
      // Three sequences of 7, 1 and 12 tokens packed together.
      const spans: [number, number][] = [];
      for (const [s, e] of [
        [0, 7],
        [7, 8],
        [8, 20],
      ])
        for (let t = s; t < e; t++) spans.push([s, e]);
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
      expect(relError(await read(ctx, ob, q.length), want.out)).toBeLessThan(1e-5);
      const stats = await read(ctx, stb, 2 * T * heads);
      expect(relError(stats.filter((_, i) => i % 2 === 0), want.lse)).toBeLessThan(1e-5);
      expect(relError(await read(ctx, dqb, q.length), grads.dq)).toBeLessThan(1e-5);
      expect(relError(await read(ctx, dkb, kk.length), grads.dk)).toBeLessThan(1e-5);
      expect(relError(await read(ctx, dvb, v.length), grads.dv)).toBeLessThan(1e-5);
    });
  }
});
