/**
 * How fast each prefill (tiled) matrix product kernel multiplies on this adapter, so a kernel can be read
 * as a share of the adapter's FMA limit (measure-fma.ts): a prefill step's products of `t` tokens, each
 * shape `copies` times with its own weights (the constant byte pattern of measure-matvec.ts), timed as one
 * pass, best of `runs` submits. Each shape's first and last outputs must equal the pattern's dot product
 * before any time counts.
 */
import { GgmlType, typeName } from '../../ggml/types.ts';
import { MatMulKernel, type MatMulVariant } from '../matmul.ts';
import type { ProductOptions } from '../matmul-params.ts';
import { deviceLayout } from '../quant/layouts.ts';
import { ParamArena } from '../runtime/arena.ts';
import type { KernelContext } from '../runtime/context.ts';
import { uploadWeights, type WeightStore } from '../runtime/weights.ts';
import { checkPatternOutput, MATVEC_PATTERN } from './measure-matvec.ts';
import { arenaPass, bestOf, firstRun } from './timing.ts';

export interface MatMulShape {
  label: string;
  n: number;
  k: number;
  copies: number;
}

export interface MatMulRate {
  type: string;
  variant: MatMulVariant;
  shape: string;
  tokens: number;
  dispatches: number;
  ms: number;
  /** 2 t n k per product. */
  gflop: number;
  GFLOPs: number;
}

export async function measureMatMul(ctx: KernelContext, type: GgmlType, variant: MatMulVariant, shapes: MatMulShape[], tokens: number, expectedDot: (k: number) => number, runs = 5, opts: ProductOptions = {}): Promise<MatMulRate[]> {
  const layout = deviceLayout(ctx.caps, type);
  // The variant's own tile whatever the grid (tiles-vec4 would run small grids with the 32 x 64 tile).
  const kernel = new MatMulKernel(ctx, type, variant, { vec4MinWorkgroups: 0, ...opts });
  const out: MatMulRate[] = [];
  for (const shape of shapes) {
    const { n, k } = shape;
    const x = ctx.storage('mm-x', tokens * k * 4, new Float32Array(tokens * k).fill(MATVEC_PATTERN.x));
    const y = ctx.storage('mm-y', tokens * n * 4);
    const weights: WeightStore[] = [];
    const bytes = layout.bufferBytes(n, k);
    for (let c = 0; c < shape.copies; c++) weights.push(uploadWeights(ctx.device, ctx.caps, 'mm-w', new Uint8Array(Math.ceil(bytes / 16) * 16).fill(MATVEC_PATTERN.byte)));
    const groups = weights.map((w) => kernel.bind(w, x, y));
    const arena = new ParamArena(ctx, groups.length);
    const once = arenaPass(ctx.device, arena, (pass) => {
      for (const g of groups) kernel.encode(pass, arena, g, { t: tokens, n, k });
    });
    await firstRun(ctx.device, once, `matmul probe ${typeName(type)}/${variant}`);
    const label = `matmul probe ${typeName(type)}/${variant} ${shape.label}`;
    await checkPatternOutput(ctx, label, expectedDot(k), y);
    await checkPatternOutput(ctx, label, expectedDot(k), y, tokens * n - 1);
    const ms = await bestOf(runs, once);
    const gflop = (2 * tokens * n * k * shape.copies) / 1e9;
    out.push({ type: typeName(type), variant, shape: shape.label, tokens, dispatches: groups.length, ms, gflop, GFLOPs: gflop / (ms / 1e3) });
    for (const b of [x, y, ...weights]) b.destroy();
    arena.buffer.destroy();
  }
  return out;
}
