/**
 * What the chains share (ffn-chain.ts, qkv-chain.ts): several kernels' work as phases of one dispatch of
 * persistent workgroups on llvmpipe, one per compute thread, meeting at grid barriers (chain-grid.wgsl).
 * Each phase is an engine kernel's own WGSL, its module-scope names suffixed and its bindings the
 * shader's (runtime/wgsl-namespace.ts), so a chain's outputs are the bits of the dispatches it replaces.
 */
import type { GgmlType } from '../ggml/types.ts';
import gridCode from './chain-grid.wgsl?raw';
import type { ProductTail } from './matvec-tail.ts';
import { rowsKernelBody, rowsPerInvocationFor } from './matvec.ts';
import type { KernelContext } from './runtime/context.ts';
import { ParamArena } from './runtime/arena.ts';
import { MATMUL_PARAM_WORDS, writeMatmulParams, type MatmulParams } from './matmul-params.ts';
import { LLVMPIPE_LOOP_BUDGET } from './runtime/loop-budget.ts';
import { namespaceWgsl, rebindWgsl, type Rebinding } from './runtime/wgsl-namespace.ts';
import { weightsWgsl } from './runtime/weights.ts';

/** Loop passes left to a chain's barriers below which it is not built (the caller keeps its dispatches). */
export const MIN_SPIN_PASSES = 4096;

/** The value of a chain's `two` param: the trip count of chain-grid.wgsl's budget_check. */
export const CHAIN_CHECK_PASSES = 2;

/** Bytes of a grid buffer for `slots` chain dispatches a step: an unused word, the failures, a word each (chain-grid.wgsl). */
export function chainGridBytes(slots: number): number {
  return 4 * (2 + slots);
}

/** chain-grid.wgsl with the grid's words at `binding`. */
export function gridWgsl(binding: number): string {
  return gridCode.replace('CHAIN_GRID', String(binding));
}

/** Workgroup lanes a chain runs with: one SIMD instruction of the rasteriser (at least 8). */
export function chainLanes(ctx: KernelContext): number {
  return Math.max(8, ctx.caps.cpuLanes);
}

/** A product phase: the rows kernel with its tail as a function (rowsKernelBody), its names suffixed, its bindings the shader's. */
export function productLink(ctx: KernelContext, type: GgmlType, t: number, tail: ProductTail, suffix: string, map: Record<number, Rebinding>, edit: (code: string) => string = (c) => c): string {
  const body = edit(rowsKernelBody(ctx.caps, type, t, { xq8: true, tail }) + '\n' + weightsWgsl(ctx.caps, 0));
  return rebindWgsl(namespaceWgsl(body, suffix, new Set(['Params'])), map);
}

/**
 * Loop passes a product phase takes in one persistent workgroup at most (llvmpipe counts every pass of
 * every loop of an invocation; loops of a constant trip count of at most 32 are unrolled and not
 * counted): per call of its body, the block walk and `tailPerRow` passes of its tail for each of the t
 * rows of x, and the loops over the rows and the calls themselves.
 */
export function productLoopPasses(ctx: KernelContext, p: { n: number; k: number; type: GgmlType }, t: number, workgroups: number, tailPerRow: number): number {
  const calls = Math.ceil(Math.ceil(p.n / (chainLanes(ctx) * rowsPerInvocationFor(p.type))) / workgroups);
  return calls * (p.k / 32 + 1 + t * tailPerRow + 2 * (t + 1)) + calls + 1;
}

/** The passes of llvmpipe's loop budget a chain whose phases take `passes` leaves its barriers' waits. */
export function spinPassesLeft(ctx: KernelContext, passes: number): number {
  const budget = ctx.caps.loopBudget === Infinity ? LLVMPIPE_LOOP_BUDGET : ctx.caps.loopBudget;
  return budget - passes - 64;
}

/** Products' Params structs back to back, as a chain's `phases` buffer holds them (one a phase of a rows-of-x count). */
export function matmulParamWords(ctx: KernelContext, products: readonly MatmulParams[]): Uint32Array {
  const arena = new ParamArena(ctx, products.length);
  const words = new Uint32Array(products.length * MATMUL_PARAM_WORDS);
  try {
    products.forEach((p, i) => {
      const s = writeMatmulParams(arena, p);
      words.set(arena.u32.subarray(s, s + MATMUL_PARAM_WORDS), i * MATMUL_PARAM_WORDS);
    });
  } finally {
    arena.buffer.destroy();
  }
  return words;
}
