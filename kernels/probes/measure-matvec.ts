/**
 * How fast each decode matrix-vector kernel streams its weights, so a kernel can be read as a share of
 * the adapter's streaming-read limit (measure-stream.ts). Two shapes per weight type:
 *   - "long": one product over a matrix bigger than the CPU's last-level cache (the kernel's own rate);
 *   - "model": a decode step's products for SmolLM2-135M-like layers (576 wide, 1536 FFN), each layer
 *     with its own weights, so the short dispatches and their launch cost count as they do in decode.
 * The weights are a constant byte pattern (every scale a small normal f16), so timing does not depend
 * on the values; correctness is the kernel tests' job.
 */
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatVecKernel, type MatVecVariant } from '../matvec.ts';
import type { ProductOptions } from '../matmul-params.ts';
import { BLOCK_WALK_TYPES, deviceLayout, gpuLayout } from '../quant/layouts.ts';
import { QuantizeXKernel, q8RowVec4s } from '../quantize-x.ts';
import { ParamArena } from '../runtime/arena.ts';
import type { KernelContext } from '../runtime/context.ts';
import { uploadWeights, type WeightStore } from '../runtime/weights.ts';
import { readWords } from './readback.ts';
import { arenaPass, bestOf, firstRun, onePass, submitMs } from './timing.ts';

/** The decode weight types whose matrix-vector kernels are measured. */
export const MATVEC_PROBE_TYPES = [GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K, GgmlType.F16] as const;

/** Every byte of every probe matrix (so every f16 scale is a small normal number), and every x value. */
export const MATVEC_PATTERN = { byte: 0x11, x: 0.5 } as const;
const PATTERN = MATVEC_PATTERN.byte;
const X = MATVEC_PATTERN.x;

export interface MatVecShape {
  label: string;
  /** Products of one step: rows n, columns k, how many distinct matrices of that shape. */
  products: { n: number; k: number; copies: number }[];
}

export interface MatVecRate {
  type: string;
  variant: MatVecVariant;
  /** x as the kernel reads it: f32, or int8 blocks (CPU rasterisers' block-walking products; the GPU's dp4a kernel quantizes f32 x itself). */
  x: 'f32' | 'int8';
  shape: string;
  weightBytes: number;
  dispatches: number;
  ms: number;
  GBps: number;
}

const LAYERS = 30;
const NORM_EPS = 1e-5;

export function matvecShapes(longBytes = 96 * 2 ** 20): (type: GgmlType) => MatVecShape[] {
  return (type) => {
    const plain = gpuLayout(type);
    const row = plain.rowBytes(1536);
    // Rows are whole blocks: K-quants' 256-element blocks take SmolLM2's 576 as 768.
    const d = Math.ceil(576 / plain.blockElements) * plain.blockElements;
    return [
      { label: 'long 1536-wide', products: [{ n: Math.floor(longBytes / row), k: 1536, copies: 1 }] },
      {
        label: `model ${LAYERS} layers`,
        products: [
          { n: 576, k: d, copies: 2 * LAYERS },
          { n: 192, k: d, copies: 2 * LAYERS },
          { n: 1536, k: d, copies: 2 * LAYERS },
          { n: 576, k: 1536, copies: LAYERS },
        ],
      },
    ];
  };
}

/**
 * Time `variant` on every shape; the best of `runs` submits of one pass holding the step's products.
 * `expectedDot(k)`: one row of the pattern matrix dotted with x, as a CPU decoder computes it (the
 * caller's: kernels/ has no CPU decoders); the first output must equal it before any time counts.
 * `opts`: the kernel's options beyond the engine's choice (a GPU workgroup shape, the norm folded in with
 * a norm weight of ones; bench/gpu/lab.ts).
 */
export async function measureMatVec(ctx: KernelContext, type: GgmlType, variant: MatVecVariant, shapes: MatVecShape[], expectedDot: (k: number) => number, runs = 5, opts: ProductOptions = {}): Promise<MatVecRate[]> {
  // The device's layout: rows in groups where it keeps them so (weightRowGroup), buffers of whole groups.
  const layout = deviceLayout(ctx.caps, type);
  // As the engine runs it: CPU rasterisers' block-walking types read x quantized (quantize-x.ts).
  const xq8 = opts.xq8 ?? (ctx.caps.software && variant === 'rows' && BLOCK_WALK_TYPES.has(type));
  const kernel = new MatVecKernel(ctx, type, 1, variant, { ...opts, xq8 });
  const out: MatVecRate[] = [];
  for (const shape of shapes) {
    const bufs: WeightStore[] = [];
    const jobs: { group: GPUBindGroup; n: number; k: number }[] = [];
    let weightBytes = 0;
    const maxK = Math.max(...shape.products.map((p) => p.k));
    const maxN = Math.max(...shape.products.map((p) => p.n));
    const xf = ctx.storage('mv-x', maxK * 4, new Float32Array(maxK).fill(X));
    const y = ctx.storage('mv-y', maxN * 4);
    bufs.push(xf, y);
    const x = xq8 ? await quantized(ctx, xf, maxK) : xf;
    if (xq8) bufs.push(x);
    // Norm-fused products read RMSNorm(x) with a norm weight of ones: every x value becomes 1 / sqrt(1 + eps / X^2).
    const norm = opts.norm ? ctx.storage('mv-norm', maxK * 4, new Float32Array(maxK).fill(1)) : undefined;
    if (norm) bufs.push(norm);
    const matrices: { w: WeightStore; n: number; k: number }[] = [];
    for (const p of shape.products) {
      const bytes = layout.bufferBytes(p.n, p.k);
      for (let c = 0; c < p.copies; c++) {
        // In the device's weight store (a texture on llvmpipe), as the engine keeps them.
        const w = uploadWeights(ctx.device, ctx.caps, 'mv-w', new Uint8Array(Math.ceil(bytes / 16) * 16).fill(PATTERN));
        bufs.push(w);
        matrices.push({ w, n: p.n, k: p.k });
        weightBytes += bytes;
      }
    }
    for (const m of matrices) jobs.push({ group: kernel.bind(m.w, x, y, norm ? { norm } : {}), n: m.n, k: m.k });
    const arena = new ParamArena(ctx, jobs.length);
    const once = arenaPass(ctx.device, arena, (pass) => {
      for (const j of jobs) kernel.encode(pass, arena, j.group, { t: 1, n: j.n, k: j.k, xStride: xq8 ? q8RowVec4s(j.k) : j.k, normEps: NORM_EPS });
    });
    await firstRun(ctx.device, once, `matvec probe ${typeName(type)}/${variant}`);
    const normed = opts.norm ? 1 / Math.sqrt(X * X + NORM_EPS) : 1;
    await checkPatternOutput(ctx, `matvec probe ${typeName(type)}`, expectedDot(shape.products[shape.products.length - 1].k) * normed, y);
    const ms = await bestOf(runs, once);
    out.push({ type: typeName(type), variant, x: xq8 || variant === 'dp4a' ? 'int8' : 'f32', shape: shape.label, weightBytes, dispatches: jobs.length, ms, GBps: weightBytes / ms / 1e6 });
    for (const b of bufs) b.destroy();
    arena.buffer.destroy();
  }
  return out;
}

/** x (k f32 values) as int8 blocks, written by the engine's quantize pass. */
async function quantized(ctx: KernelContext, x: GPUBuffer, k: number): Promise<GPUBuffer> {
  const q = new QuantizeXKernel(ctx);
  const xq = ctx.storage('mv-xq', q8RowVec4s(k) * 16);
  const arena = new ParamArena(ctx, 1);
  const commands = onePass(ctx.device, (pass) => q.encode(pass, arena, q.bind(x, xq), { tokens: 1, k }));
  arena.flush();
  await submitMs(ctx.device, commands);
  arena.buffer.destroy();
  return xq;
}

/**
 * Every row of the pattern matrix dots x to the same value; output `index` of y (default the first) must
 * be it, so a kernel that skipped part of its work is caught rather than reported as fast.
 */
export async function checkPatternOutput(ctx: KernelContext, label: string, want: number, y: GPUBuffer, index = 0): Promise<void> {
  const got = new Float32Array(new Uint32Array(await readWords(ctx.device, y, index + 1)).buffer)[index];
  // 2e-3: x = 0.5 quantized to int8 is 127 steps of f16(0.5 / 127), 0.49997.
  if (!(Math.abs(got - want) <= 2e-3 * Math.abs(want) + 1e-6)) {
    throw new Error(`${label}: output ${index} is ${got}, not the expected ${want}; the kernel did not do the whole product`);
  }
}
