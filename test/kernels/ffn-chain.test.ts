/**
 * The FFN chain (kernels/ffn-chain.ts): a layer's O, gate|up and down decode products with their tails in
 * one dispatch of persistent workgroups must give the bits of the three dispatches it replaces (the
 * residual stream, the activation, both norms' int8 rows), layer after layer in one pass, for every row
 * count the tails take and for products of different weight types; and a barrier that cannot be met
 * must count itself failed rather than let the products run on unsynchronized.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { chainPhaseWords, CHAIN_BARRIERS, FfnChainKernel, type FfnChainShape } from '../../kernels/ffn-chain.ts';
import { chainGridBytes } from '../../kernels/chain.ts';
import { matvecUpTo } from '../../kernels/matmul-select.ts';
import { MatVecKernel } from '../../kernels/matvec.ts';
import { tailCounterWords } from '../../kernels/matvec-tail.ts';
import { q8RowVec4s, QuantizeXKernel } from '../../kernels/quantize-x.ts';
import { llvmpipePoolSize } from '../../engine/platform/worker-pinning.ts';
import { readU32, runPass, testContext } from '../helpers/gpu.ts';
import { randomF32 } from '../helpers/random.ts';
import { randomWeights, uploadRows } from '../quant/weights.ts';

const ctx = await testContext();
const applies = ctx.caps.orderedAtomics && ctx.caps.weightTextures;
const EPS = 1e-5;

function setup(shape: FfnChainShape, t: number, layers: number) {
  const { dim: D, ffn: F } = shape;
  const strides = { x: D, xq: q8RowVec4s };
  const words = chainPhaseWords(ctx, shape, matvecUpTo(ctx), strides);
  const L = Array.from({ length: layers }, (_, l) => ({
    o: uploadRows(ctx, randomWeights(shape.types.o, D, shape.qDim, 11 + l)),
    gateUp: uploadRows(ctx, randomWeights(shape.types.gateUp, 2 * F, D, 21 + l)),
    down: uploadRows(ctx, randomWeights(shape.types.down, D, F, 31 + l)),
    ffnNorm: ctx.storage('ffn.norm', D * 4, randomF32(D, 41 + l)),
    nextNorm: ctx.storage('next.norm', D * 4, randomF32(D, 51 + l)),
  }));
  const attnF32 = ctx.storage('attn', t * shape.qDim * 4, randomF32(t * shape.qDim, 61));
  const x0 = randomF32(t * D, 71);
  const fresh = () => ({
    attnQ8: ctx.storage('attn.q8', t * q8RowVec4s(shape.qDim) * 16),
    x: ctx.storage('x', x0.byteLength, x0),
    counters: ctx.storage('counters', 4 * Math.max(F / 32, tailCounterWords({ kind: 'norm-q8', mode: 'q8_0' }, { n: D, inOffset: 0, inStride: D }))),
    xNormQ8: ctx.storage('x.norm.q8', t * q8RowVec4s(D) * 16),
    gateUpOut: ctx.storage('gate-up', t * 2 * F * 4),
    actQ8: ctx.storage('act.q8', t * q8RowVec4s(F) * 16),
    phases: ctx.storage('phases', words.byteLength, words),
    grid: ctx.storage('grid', chainGridBytes(layers)),
  });
  const quantize = new QuantizeXKernel(ctx);
  const attnIn = (pass: GPUComputePassEncoder, arena: Parameters<Parameters<typeof runPass>[1]>[1], attnQ8: GPUBuffer) => quantize.encode(pass, arena, quantize.bind(attnF32, attnQ8), { tokens: t, k: shape.qDim });
  return { L, fresh, attnIn, strides };
}

async function outputs(b: { x: GPUBuffer; xNormQ8: GPUBuffer; actQ8: GPUBuffer; gateUpOut: GPUBuffer }, shape: FfnChainShape, t: number) {
  return {
    x: await readU32(ctx, b.x, t * shape.dim),
    xNormQ8: await readU32(ctx, b.xNormQ8, t * q8RowVec4s(shape.dim) * 4),
    actQ8: await readU32(ctx, b.actQ8, t * q8RowVec4s(shape.ffn) * 4),
    gateUp: await readU32(ctx, b.gateUpOut, t * 2 * shape.ffn),
  };
}

describe.skipIf(!applies)('the FFN chain: O, gate|up and down with their tails in one dispatch', () => {
  const workers = llvmpipePoolSize();
  const shapes: FfnChainShape[] = [
    { dim: 192, qDim: 192, ffn: 320, types: { o: GgmlType.Q8_0, gateUp: GgmlType.Q8_0, down: GgmlType.Q8_0 }, modes: { ffnNorm: 'q8_0', act: 'q8_0', nextNorm: 'q8_0' }, activation: 'silu', eps: EPS },
    { dim: 256, qDim: 128, ffn: 512, types: { o: GgmlType.Q4_0, gateUp: GgmlType.Q4_K, down: GgmlType.Q6_K }, modes: { ffnNorm: 'q8_K', act: 'q8_K', nextNorm: 'q8_K' }, activation: 'gelu', eps: EPS },
  ];
  it.each(shapes.map((s) => [`${typeName(s.types.o)}/${typeName(s.types.gateUp)}/${typeName(s.types.down)}`, s] as const))('%s products: the bits of the three dispatches, two layers in one pass, 1-3 rows of x', async (_, shape) => {
    for (let t = 1; t <= matvecUpTo(ctx); t++) {
      const { L, fresh, attnIn, strides } = setup(shape, t, 2);
      const [pO, pGu, pDn] = (await import('../../kernels/ffn-chain.ts')).chainProducts(shape, t, strides);
      const norm = { kind: 'norm-q8', mode: shape.modes.ffnNorm } as const;
      const kO = new MatVecKernel(ctx, shape.types.o, t, 'rows', { xq8: true, tail: norm });
      const kGu = new MatVecKernel(ctx, shape.types.gateUp, t, 'rows', { xq8: true, tail: { kind: 'glu-q8', mode: shape.modes.act, activation: shape.activation } });
      const kDn = new MatVecKernel(ctx, shape.types.down, t, 'rows', { xq8: true, tail: { kind: 'norm-q8', mode: shape.modes.nextNorm } });
      const a = fresh();
      await runPass(ctx, (pass, arena) => {
        attnIn(pass, arena, a.attnQ8);
        for (const l of L) {
          kO.encode(pass, arena, kO.bind(l.o, a.attnQ8, a.x, { tail: [a.counters, l.ffnNorm, a.xNormQ8] }), pO);
          kGu.encode(pass, arena, kGu.bind(l.gateUp, a.xNormQ8, a.gateUpOut, { tail: [a.counters, a.actQ8] }), pGu);
          kDn.encode(pass, arena, kDn.bind(l.down, a.actQ8, a.x, { tail: [a.counters, l.nextNorm, a.xNormQ8] }), pDn);
        }
      });
      const want = await outputs(a, shape, t);

      const chain = new FfnChainKernel(ctx, shape, t, workers);
      const b = fresh();
      await runPass(ctx, (pass, arena) => {
        attnIn(pass, arena, b.attnQ8);
        L.forEach((l, i) => chain.encode(pass, arena, chain.bind({ ...b, o: l.o, gateUp: l.gateUp, down: l.down, ffnNorm: l.ffnNorm, nextNorm: l.nextNorm }), i));
      });
      const got = await outputs(b, shape, t);
      expect(want.x.some((v) => v !== 0) && want.xNormQ8.some((v) => v !== 0)).toBe(true);
      expect(got.x).toEqual(want.x);
      expect(got.xNormQ8).toEqual(want.xNormQ8);
      expect(got.actQ8).toEqual(want.actQ8);
      expect(got.gateUp).toEqual(want.gateUp);
      // Every workgroup passed every barrier, none gave up; the tails' counters are back at zero.
      expect(Array.from(await readU32(ctx, b.grid, 2 + L.length))).toEqual([0, 0, ...L.map(() => CHAIN_BARRIERS * workers)]);
      expect((await readU32(ctx, b.counters, b.counters.size / 4)).every((v) => v === 0)).toBe(true);
    }
  });

  it('a barrier that more workgroups than threads cannot meet counts itself failed', async () => {
    const shape = shapes[0];
    const { L, fresh, attnIn } = setup(shape, 1, 1);
    // One workgroup more than llvmpipe has threads: the last starts only once another ends, so the first
    // ones wait at their barrier with a small budget and give up.
    const chain = new FfnChainKernel(ctx, shape, 1, workers + 1, 8);
    const b = fresh();
    await runPass(ctx, (pass, arena) => {
      attnIn(pass, arena, b.attnQ8);
      chain.encode(pass, arena, chain.bind({ ...b, o: L[0].o, gateUp: L[0].gateUp, down: L[0].down, ffnNorm: L[0].ffnNorm, nextNorm: L[0].nextNorm }), 0);
    });
    expect((await readU32(ctx, b.grid, 2))[1]).toBeGreaterThan(0);
  });

  it('a wait that spends all of llvmpipe\'s loop budget, stopping every loop short, is caught at the end', async () => {
    const shape = shapes[0];
    const { L, fresh, attnIn } = setup(shape, 1, 1);
    // A spin budget past llvmpipe's own: the wait never gives up by itself, the loop budget ends it.
    const chain = new FfnChainKernel(ctx, shape, 1, workers + 1, 1 << 20);
    const b = fresh();
    await runPass(ctx, (pass, arena) => {
      attnIn(pass, arena, b.attnQ8);
      chain.encode(pass, arena, chain.bind({ ...b, o: L[0].o, gateUp: L[0].gateUp, down: L[0].down, ffnNorm: L[0].ffnNorm, nextNorm: L[0].nextNorm }), 0);
    });
    expect((await readU32(ctx, b.grid, 2))[1]).toBeGreaterThan(0);
  });
});
