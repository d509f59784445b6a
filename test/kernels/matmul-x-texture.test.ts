/**
 * On llvmpipe the tiled products read quantized x through a texture it is copied into between their
 * dispatches (kernels/matmul-x-texture.ts), where the step allows copies (ParamArena.beginStep): the same
 * bits as reading x from storage, one dispatch for the whole step (where a uniform window would take
 * several; 16 tokens an invocation where that grid stays wide, else 8), the copy taken when the product
 * runs, and x from a window or storage where no copy can run.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType } from '../../ggml/types.ts';
import { MatMulKernel, WIDE_TEXTURE_MIN_WORKGROUPS, XQ8_WIDE_TOKENS } from '../../kernels/matmul.ts';
import { xq8Buffer } from '../../kernels/matmul-x-window.ts';
import { QuantizeXKernel, q8RowVec4s } from '../../kernels/quantize-x.ts';
import { readF32, recordLabels, runPass, runStep, testContext } from '../helpers/gpu.ts';
import { randomF32 } from '../helpers/random.ts';
import { randomWeights, uploadRows } from '../quant/weights.ts';
import { runOverQuantizedX } from './product-cases.ts';

const ctx = await testContext();

describe.skipIf(!ctx.caps.weightTextures)('tiled products with x copied into a texture', () => {
  const cases = [
    { type: GgmlType.Q8_0, t: 5, k: 576, n: 72 },
    { type: GgmlType.Q4_0, t: 9, k: 1536, n: 72 },
    { type: GgmlType.Q8_0, t: 64, k: 576, n: 72 },
    { type: GgmlType.Q8_0, t: 64, k: 1536, n: 72 },
    // Steps that are not whole 8-token tiles.
    { type: GgmlType.Q4_K, t: 24, k: 768, n: 72 },
    { type: GgmlType.Q8_0, t: 49, k: 576, n: 72 },
    { type: GgmlType.Q8_0, t: 57, k: 576, n: 72 },
    // Too wide for 16 rows in a 64 KiB window (storage x before): one texture dispatch all the same.
    { type: GgmlType.Q8_0, t: 32, k: 4096, n: 72 },
    // Products whose 16-token grid stays wide (a batched decode step's gate|up, a prompt's products),
    // one of them not whole 16-token tiles, and one that is wide at 8 lanes a workgroup but not at 16.
    { type: GgmlType.Q8_0, t: 16, k: 576, n: 2048 },
    { type: GgmlType.Q4_K, t: 40, k: 768, n: 1024 },
    { type: GgmlType.Q8_0, t: 33, k: 576, n: 512 },
  ];
  // A workgroup of the tiled kernel covers its lanes x 16 weight rows (matmul.ts REGS).
  const tileN = Math.max(8, ctx.caps.cpuLanes) * 16;
  const wide = (t: number, n: number) => t >= XQ8_WIDE_TOKENS && Math.ceil(n / tileN) * Math.ceil(t / XQ8_WIDE_TOKENS) >= WIDE_TEXTURE_MIN_WORKGROUPS;
  it('has cases of both widths', () => {
    expect(cases.some((c) => wide(c.t, c.n)) && cases.some((c) => !wide(c.t, c.n))).toBe(true);
  });
  it.each(cases)('$t tokens, $k wide, $n rows: the same bits as storage x, one dispatch of the kernel its grid suits', async ({ type, t, k, n }) => {
    const w = uploadRows(ctx, randomWeights(type, n, k, 5 + t));
    const x = ctx.storage('x', t * k * 4, randomF32(t * k, 9 + k));
    const y0 = randomF32(4 + t * (n + 4), 11);
    const kern = new MatMulKernel(ctx, type, 'regs', { xq8: true });
    const viaStorage = ctx.storage('xq.storage', t * q8RowVec4s(k) * 16);
    const viaTexture = xq8Buffer(ctx, 'xq.texture', t * q8RowVec4s(k) * 16);
    const [ys, yt] = [ctx.storage('y.s', y0.byteLength, y0), ctx.storage('y.t', y0.byteLength, y0)];
    const p = { t, n, k, yStride: n + 4 };
    // Storage x in a plain pass (no step to copy in), the texture in a step.
    const plain = await runOverQuantizedX(ctx, kern, kern.bind(w, viaStorage, ys), viaStorage, x, ys, p);
    const textured = await runOverQuantizedX(ctx, kern, kern.bind(w, viaTexture, yt), viaTexture, x, yt, p, true);
    expect(plain.labels.some((l) => l.endsWith('-xtex'))).toBe(false);
    // Through a texture a step runs 16 tokens an invocation where that grid keeps WIDE_TEXTURE_MIN_WORKGROUPS workgroups, else 8.
    expect(textured.labels).toHaveLength(1);
    expect(textured.labels[0]).toMatch(/-xtex$/);
    expect(textured.labels[0].includes('-t16')).toBe(wide(t, n));
    expect(Array.from(textured.y)).toEqual(Array.from(plain.y));
    expect(plain.y.slice(4).some((v, i) => v !== y0[4 + i])).toBe(true);
  });

  it('takes each product its x as it is when the product runs, in one step', async () => {
    const [type, k, n, t] = [GgmlType.Q8_0, 576, 40, 20];
    const w = uploadRows(ctx, randomWeights(type, n, k, 8));
    const kern = new MatMulKernel(ctx, type, 'regs', { xq8: true });
    const quantize = new QuantizeXKernel(ctx);
    const xs = [ctx.storage('x.a', t * k * 4, randomF32(t * k, 21)), ctx.storage('x.b', t * k * 4, randomF32(t * k, 22))];
    const xq = xq8Buffer(ctx, 'xq', t * q8RowVec4s(k) * 16);
    const xqPlain = ctx.storage('xq.plain', t * q8RowVec4s(k) * 16);
    const ys = [0, 1].map((i) => ctx.storage(`y.${i}`, t * n * 4));
    const plain = [0, 1].map((i) => ctx.storage(`y.plain.${i}`, t * n * 4));
    const p = { t, n, k, xStride: q8RowVec4s(k) };
    // One x buffer rewritten between two products of the same step.
    await runStep(ctx, (pass, arena) => {
      for (const i of [0, 1]) {
        quantize.encode(pass, arena, quantize.bind(xs[i], xq), { tokens: t, k });
        kern.encode(pass, arena, kern.bind(w, xq, ys[i]), p);
      }
    });
    for (const i of [0, 1]) {
      await runPass(ctx, (pass, arena) => {
        quantize.encode(pass, arena, quantize.bind(xs[i], xqPlain), { tokens: t, k });
        kern.encode(pass, arena, kern.bind(w, xqPlain, plain[i]), p);
      });
      expect(Array.from(await readF32(ctx, ys[i], t * n))).toEqual(Array.from(await readF32(ctx, plain[i], t * n)));
    }
  });

  it('reads x through its window where the step cannot copy between dispatches', async () => {
    const [type, k, n, t] = [GgmlType.Q8_0, 576, 40, 20];
    const w = uploadRows(ctx, randomWeights(type, n, k, 9));
    const kern = new MatMulKernel(ctx, type, 'regs', { xq8: true });
    const xq = xq8Buffer(ctx, 'xq', t * q8RowVec4s(k) * 16);
    const y = ctx.storage('y', t * n * 4);
    const labels: string[] = [];
    await runPass(ctx, (pass, arena) => {
      recordLabels(arena, labels);
      kern.encode(pass, arena, kern.bind(w, xq, y), { t, n, k, xStride: q8RowVec4s(k) });
    });
    expect(labels).toEqual(['matmul-regs-Q8_0-xq8-t16-xwin']);
  });
});
