/**
 * CPU rasterisers' tiled products read quantized x through a uniform window where a step's x fits one
 * (kernels/matmul-x-window.ts): the same bits as reading it from storage, the window kernel actually
 * dispatched where it applies, and storage x kept where it does not.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatMulKernel } from '../../kernels/matmul.ts';
import { WeightMatmul } from '../../kernels/matmul-select.ts';
import { xq8Buffer, xWindowBytes } from '../../kernels/matmul-x-window.ts';
import { q8RowVec4s } from '../../kernels/quantize-x.ts';
import { KernelContext } from '../../kernels/runtime/context.ts';
import { testContext } from '../helpers/gpu.ts';
import { randomF32 } from '../helpers/random.ts';
import { randomWeights, uploadRows } from '../quant/weights.ts';
import { runOverQuantizedX } from './product-cases.ts';

const ctx = await testContext();
const windows = ctx.caps.software && xWindowBytes(ctx.caps) > 0;

describe.skipIf(!windows)('tiled products with x in a uniform window', () => {
  const cases = [
    { type: GgmlType.Q8_0, t: 5, k: 576 },
    { type: GgmlType.Q4_0, t: 9, k: 1536 },
    { type: GgmlType.Q8_0, t: 16, k: 576 },
    { type: GgmlType.Q8_0, t: 40, k: 576 },
    { type: GgmlType.Q8_0, t: 64, k: 576 },
    { type: GgmlType.Q4_K, t: 24, k: 768 },
    // x past one window: one dispatch per window of whole 16-token tiles (32 rows of 1536-wide x a window)...
    { type: GgmlType.Q8_0, t: 64, k: 1536 },
    { type: GgmlType.Q8_0, t: 40, k: 1536 },
    // ... unless a window holds fewer than 16 rows: storage x.
    { type: GgmlType.Q8_0, t: 32, k: 4096 },
  ];
  it.each(cases)('$t tokens, $k wide: the same bits as storage x; window kernels where 16 rows of x fit 64 KiB', async ({ type, t, k }) => {
    // 70 rows: y stored one row at a time (-y1 kernels); the tests below store four rows at once.
    const n = 70;
    const w = uploadRows(ctx, randomWeights(type, n, k, 5 + t));
    const x = ctx.storage('x', t * k * 4, randomF32(t * k, 9 + k));
    const y0 = randomF32(4 + t * (n + 2), 11);
    const kern = new MatMulKernel(ctx, type, 'regs', { xq8: true });
    const viaStorage = ctx.storage('xq.storage', t * q8RowVec4s(k) * 16);
    const viaWindow = xq8Buffer(ctx, 'xq.window', t * q8RowVec4s(k) * 16);
    const [ys, yw] = [ctx.storage('y.s', y0.byteLength, y0), ctx.storage('y.w', y0.byteLength, y0)];
    const p = { t, n, k, yStride: n + 2 };
    const plain = await runOverQuantizedX(ctx, kern, kern.bind(w, viaStorage, ys), viaStorage, x, ys, p);
    const windowed = await runOverQuantizedX(ctx, kern, kern.bind(w, viaWindow, yw), viaWindow, x, yw, p);
    expect(plain.labels.some((l) => l.endsWith('-xwin'))).toBe(false);
    const rowBytes = q8RowVec4s(k) * 16;
    const fits = t * rowBytes <= xWindowBytes(ctx.caps);
    const perWindow = Math.floor(xWindowBytes(ctx.caps) / rowBytes / 16) * 16;
    const products = windowed.labels.filter((l) => l.startsWith('matmul-'));
    expect(products.every((l) => l.endsWith('-xwin'))).toBe(fits || perWindow > 0);
    expect(products.every((l) => l.includes('-y1'))).toBe(true);
    expect(products.length).toBe(fits || perWindow === 0 ? 1 : Math.ceil(t / perWindow));
    expect(Array.from(windowed.y)).toEqual(Array.from(plain.y));
    expect(plain.y.slice(4).some((v, i) => v !== y0[4 + i])).toBe(true);
  });

  it.each([
    [5, ''],
    [32, '-t16'],
  ])('WeightMatmul binds once for its matrix-vector and tiled kernels, and its %i-token steps read the window', async (t, width) => {
    const [type, k, n] = [GgmlType.Q8_0, 576, 40];
    const w = uploadRows(ctx, randomWeights(type, n, k, 3));
    const x = ctx.storage('x', t * k * 4, randomF32(t * k, 4));
    const xq = xq8Buffer(ctx, 'xq', t * q8RowVec4s(k) * 16);
    const y = ctx.storage('y', (4 + t * n) * 4);
    const mm = new WeightMatmul(ctx, type, { xq8: true });
    const { labels } = await runOverQuantizedX(ctx, mm, mm.bind(w, xq, y), xq, x, y, { t, n, k, yStride: n });
    expect(labels).toEqual([`matmul-regs-${typeName(type)}-xq8${width}-xwin`]);
  });

  it('the kernel reading quantized x from storage is built on first use, by a step that cannot use a window', async () => {
    // A context of its own: its pipeline cache starts empty (SwiftShader compiles each pipeline as it is made).
    const fresh = new KernelContext(ctx.device, ctx.caps);
    const [type, k, n, t] = [GgmlType.Q8_0, 576, 40, 5];
    const w = uploadRows(fresh, randomWeights(type, n, k, 8));
    const x = fresh.storage('x', t * k * 4, randomF32(t * k, 12));
    const xq = xq8Buffer(fresh, 'xq', t * q8RowVec4s(k) * 16);
    const [yw, ys] = [fresh.storage('y.w', (4 + t * n) * 4), fresh.storage('y.s', (4 + t * n) * 4)];
    const kern = new MatMulKernel(fresh, type, 'regs', { xq8: true });
    const viaWindow = await runOverQuantizedX(fresh, kern, kern.bind(w, xq, yw), xq, x, yw, { t, n, k, yStride: n });
    expect(viaWindow.labels).toEqual(['matmul-regs-Q8_0-xq8-xwin']);
    expect(fresh.hasKernel('matmul-regs-Q8_0-xq8-xwin')).toBe(true);
    expect(fresh.hasKernel(kern.label)).toBe(false);
    // x in a buffer without uniform usage has no window: the step builds and runs the storage-x kernel.
    const plainX = fresh.storage('xq.plain', t * q8RowVec4s(k) * 16);
    const viaStorage = await runOverQuantizedX(fresh, kern, kern.bind(w, plainX, ys), plainX, x, ys, { t, n, k, yStride: n });
    expect(viaStorage.labels).toEqual([kern.label]);
    expect(fresh.hasKernel(kern.label)).toBe(true);
    expect(Array.from(viaStorage.y)).toEqual(Array.from(viaWindow.y));
    await fresh.checkKernels();
  });

  it('one bind group serves both widths through its one window, each giving the storage-x result', async () => {
    const [type, k, n, most] = [GgmlType.Q8_0, 576, 40, 32];
    const w = uploadRows(ctx, randomWeights(type, n, k, 6));
    const kern = new MatMulKernel(ctx, type, 'regs', { xq8: true });
    const [xs, xw] = [ctx.storage('xq.s', most * q8RowVec4s(k) * 16), xq8Buffer(ctx, 'xq.w', most * q8RowVec4s(k) * 16)];
    const [ys, yw] = [ctx.storage('y.s', (4 + most * n) * 4), ctx.storage('y.w', (4 + most * n) * 4)];
    const [viaStorage, viaWindow] = [kern.bind(w, xs, ys), kern.bind(w, xw, yw)];
    for (const t of [5, most]) {
      const x = ctx.storage('x', t * k * 4, randomF32(t * k, 7 + t));
      const windowed = await runOverQuantizedX(ctx, kern, viaWindow, xw, x, yw, { t, n, k, yStride: n });
      const plain = await runOverQuantizedX(ctx, kern, viaStorage, xs, x, ys, { t, n, k, yStride: n });
      expect(windowed.labels).toEqual([`matmul-regs-${typeName(type)}-xq8${t >= 16 ? '-t16' : ''}-xwin`]);
      expect(Array.from(windowed.y)).toEqual(Array.from(plain.y));
    }
  });
});
