/**
 * The GPU's int8 products (matvec-dp4a.wgsl, matmul-tiles-dp4a.wgsl) at the shapes of small and large
 * models, against float64 references, on the adapter at hand: the kernel-level half of the GPU check
 * (bench/gpu/check.ts runs it), so a model that goes wrong on one GPU but not on SwiftShader is narrowed
 * to a kernel, a kind of x (plain, norm folded in, gated) and a shape within one lease. The test suite
 * holds the same kernels to tighter references on SwiftShader (test/kernels/dp4a-products.test.ts);
 * this takes only what tells garbage from rounding: the RMS of the error against the product with x
 * itself, which quantizing x to int8 keeps near 0.5% (llama.cpp's own error), must stay under 3%.
 */
import { dequantize, quantize } from '../../engine/gguf/quant/index.ts';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatMulKernel } from '../../kernels/matmul.ts';
import { WeightMatmul } from '../../kernels/matmul-select.ts';
import type { ProductOptions } from '../../kernels/matmul-params.ts';
import { MatVecKernel } from '../../kernels/matvec.ts';
import { deviceLayout } from '../../kernels/quant/index.ts';
import { ParamArena } from '../../kernels/runtime/arena.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import { uploadWeights } from '../../kernels/runtime/weights.ts';
import { readWords } from '../../kernels/probes/readback.ts';
import { onePass, submitMs } from '../../kernels/probes/timing.ts';
import { xorshift32 } from '../../kernels/probes/xorshift.ts';

export type Int8Kind = 'plain' | 'norm' | 'glu';

export interface Int8Case {
  type: GgmlType;
  /**
   * matvec: the decode kernel (t rows of x, 1..8); tile: the prefill tile; tile-128: the 128-row tile
   * forced; product: the engine's choice by rows (WeightMatmul: a batch past workgroup memory in chunks).
   */
  kernel: 'matvec' | 'tile' | 'tile-128' | 'product';
  kind: Int8Kind;
  t: number;
  n: number;
  k: number;
}

export interface Int8Result extends Omit<Int8Case, 'type'> {
  type: string;
  /** RMS of (got - want) over RMS of want, want the float64 product with x itself. */
  error: number;
  ok: boolean;
}

/** The error an int8 product may show against the product with float x before it counts as wrong. */
export const INT8_ERROR_LIMIT = 0.03;
const EPS = 1e-5;

/**
 * Q8_0 at the shapes of TinyStories-656K (k 128 and 384, rows 64 to 2048), SmolLM2-135M (576) and a 1B
 * (2048, with rows enough for 32 a workgroup), decode at 1, 2, 6 and 8 rows of x, every kind of x; the
 * prefill tile in both its forms at 10 and 40 tokens, in Q8_0 and in Q6_K.
 */
export function int8Cases(): Int8Case[] {
  const out: Int8Case[] = [];
  const shapes: [number, number][] = [[64, 128], [128, 128], [2048, 128], [128, 384], [576, 576], [16384, 2048]];
  for (const [n, k] of shapes) {
    for (const kind of ['plain', 'norm', 'glu'] as const) {
      for (const t of [1, 2, 6, 8]) out.push({ type: GgmlType.Q8_0, kernel: 'matvec', kind, t, n: Math.min(n, t > 2 ? 2048 : n), k });
    }
  }
  // A 1B's down product at 5 and 8 rows of x: its int8 staging passes 48 KB, so WeightMatmul chunks it.
  for (const t of [5, 8]) out.push({ type: GgmlType.Q8_0, kernel: 'product', kind: 'glu', t, n: 2048, k: 8192 });
  for (const kernel of ['tile', 'tile-128'] as const) {
    for (const [n, k] of [[256, 128], [128, 384], [960, 576]]) {
      for (const kind of ['plain', 'glu'] as const) for (const t of [10, 40]) out.push({ type: GgmlType.Q8_0, kernel, kind, t, n, k });
    }
    // Q6_K (Q4_K_M's down products), whose block halves the tile scales apart.
    for (const kind of ['plain', 'glu'] as const) for (const t of [10, 40]) out.push({ type: GgmlType.Q6_K, kernel, kind, t, n: 256, k: 256 });
  }
  return out;
}

/** Deterministic values in (-scale, scale). */
function values(count: number, seed: number, scale: number): Float32Array {
  const next = xorshift32(seed);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = ((next() / 4294967296) * 2 - 1) * scale;
  return out;
}

/** The rows the product reads, as the kernel should see them (RMSNorm with weight g, or silu(gate) * up). */
function inputRows(kind: Int8Kind, x: Float32Array, g: Float32Array, t: number, k: number): Float32Array {
  const out = new Float32Array(t * k);
  const stride = kind === 'glu' ? 2 * k : k;
  for (let i = 0; i < t; i++) {
    const row = x.subarray(i * stride);
    let ss = 0;
    for (let j = 0; j < k; j++) ss += row[j] ** 2;
    const s = 1 / Math.sqrt(ss / k + EPS);
    for (let j = 0; j < k; j++) {
      if (kind === 'plain') out[i * k + j] = row[j];
      else if (kind === 'norm') out[i * k + j] = row[j] * s * g[j];
      else out[i * k + j] = (row[j] / (1 + Math.exp(-row[j]))) * row[k + j];
    }
  }
  return out;
}

/** One case on `ctx`'s device: the kernel's output against the float64 product with its input rows. */
export async function runInt8Case(ctx: KernelContext, c: Int8Case): Promise<Int8Result> {
  const { type, t, n, k, kind } = c;
  const raw = quantize(type, values(n * k, 7 + n + k, 0.5));
  const w = dequantize(type, raw, n * k);
  const x = values(t * (kind === 'glu' ? 2 * k : k), 11 + t + k, 2);
  const g = values(k, 13, 1);
  const opts: ProductOptions = kind === 'norm' ? { norm: true } : kind === 'glu' ? { glu: 'silu' } : {};
  const kernel =
    c.kernel === 'matvec'
      ? new MatVecKernel(ctx, type, t, 'dp4a', opts)
      : c.kernel === 'product'
        ? new WeightMatmul(ctx, type, opts)
        : new MatMulKernel(ctx, type, 'tiles-dp4a', { ...opts, ...(c.kernel === 'tile-128' ? { vec4MinWorkgroups: 0 } : {}) });
  if (kernel instanceof WeightMatmul) kernel.prepare(k, n);
  const store = uploadWeights(ctx.device, ctx.caps, 'int8-check-w', deviceLayout(ctx.caps, type).repack(raw, n, k));
  const bx = ctx.storage('int8-check-x', x.byteLength, x);
  const by = ctx.storage('int8-check-y', t * n * 4);
  const norm = kind === 'norm' ? ctx.storage('int8-check-g', g.byteLength, g) : undefined;
  const group = kernel.bind(store, bx, by, norm ? { norm } : {});
  const arena = new ParamArena(ctx, 8);
  const stride = kind === 'glu' ? 2 * k : k;
  const commands = onePass(ctx.device, (pass) => kernel.encode(pass, arena, group, { t, n, k, xStride: stride, normEps: EPS, gluUp: kind === 'glu' ? k : 0 }));
  arena.flush();
  ctx.device.pushErrorScope('validation');
  await submitMs(ctx.device, commands);
  const invalid = await ctx.device.popErrorScope();
  const got = new Float32Array((await readWords(ctx.device, by, t * n)).buffer);
  for (const b of [store, bx, by, norm, arena.buffer]) b?.destroy();
  if (invalid) throw new Error(`int8 check ${typeName(type)} ${c.kernel} ${kind} t=${t} ${n}x${k}: ${invalid.message}`);
  const error = productError(got, inputRows(kind, x, g, t, k), w, t, n, k);
  return { ...c, type: typeName(type), error, ok: error < INT8_ERROR_LIMIT };
}

/** RMS of (got - want) over RMS of want, want[i, r] = sum_j input[i, j] w[r, j] in float64 (NaN in got gives NaN). */
export function productError(got: Float32Array, input: Float32Array, w: Float32Array, t: number, n: number, k: number): number {
  let err = 0;
  let ref = 0;
  for (let i = 0; i < t; i++) {
    for (let r = 0; r < n; r++) {
      let want = 0;
      for (let j = 0; j < k; j++) want += input[i * k + j] * w[r * k + j];
      err += (got[i * n + r] - want) ** 2;
      ref += want ** 2;
    }
  }
  return Math.sqrt(err / Math.max(ref, 1e-30));
}
