/**
 * A layer's O, gate|up and down decode products with their tails in one dispatch of persistent
 * workgroups on llvmpipe (ffn-chain.wgsl says how and why). Each product is the engine's own rows kernel
 * (rowsKernelSource) with its tail, so every output is the bits of the three dispatches it replaces
 * (test/kernels/ffn-chain.test.ts). The joined shader's bindings:
 *
 *   0-2 the O, gate|up and down weights; 3 O's x (attention's int8 output); 4 the residual stream (O's and
 *   down's y); 5 the tails' counters; 6 the FFN norm weight; 7 the normed int8 x (O's tail writes it,
 *   gate|up reads it, down's tail writes the next layer's); 8 gate|up's output; 9 the activation's int8
 *   rows (gate|up's tail writes them, down reads them); 10 the next layer's attention norm weight;
 *   11 the products' params (`phases`, writeChainPhases); 12 the grid barrier's words (zeroed each step).
 */
import { typeName, type GgmlType } from '../ggml/types.ts';
import type { Activation } from './activation.ts';
import chainWgsl from './ffn-chain.wgsl?raw';
import type { MatmulParams } from './matmul-params.ts';
import { tailConstants, type ProductTail, type TailParams } from './matvec-tail.ts';
import { rowsPerInvocationFor } from './matvec.ts';
import { chainLanes, CHAIN_CHECK_PASSES, gridWgsl, matmulParamWords, MIN_SPIN_PASSES, productLink, productLoopPasses, spinPassesLeft } from './chain.ts';
import type { XqMode } from './quantize-x.ts';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type BindingKind, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import type { WeightStore } from './runtime/weights.ts';

/** The FFN's shape and types: the residual stream `dim` wide, attention's output `qDim`, an FFN of `ffn` values. */
export interface FfnChainShape {
  dim: number;
  qDim: number;
  ffn: number;
  types: { o: GgmlType; gateUp: GgmlType; down: GgmlType };
  /** The int8 modes of the FFN norm's output (gate|up's x), the activation (down's x), the next norm (the next QKV's x). */
  modes: { ffnNorm: XqMode; act: XqMode; nextNorm: XqMode };
  activation: Activation;
  eps: number;
}

export interface FfnChainBuffers {
  o: WeightStore;
  gateUp: WeightStore;
  down: WeightStore;
  /** Attention's int8 output, O's x. */
  attnQ8: GPUBuffer;
  /** The residual stream. */
  x: GPUBuffer;
  counters: GPUBuffer;
  ffnNorm: GPUBuffer;
  /** The normed int8 rows (gate|up's x; the next layer's QKV's x). */
  xNormQ8: GPUBuffer;
  gateUpOut: GPUBuffer;
  actQ8: GPUBuffer;
  nextNorm: GPUBuffer;
  phases: GPUBuffer;
  grid: GPUBuffer;
}

const PHASES = 11;
const GRID = 12;
// The weights are llvmpipe's textures (GpuCaps.weightTextures), declared by each link itself.
// The products' storage bindings are all read_write (rebindWgsl): in one dispatch a buffer one product
// reads another writes.
const BINDINGS: readonly BindingKind[] = ['texture', 'texture', 'texture', 'write', 'write', 'write', 'write', 'write', 'write', 'write', 'write', 'read', 'write'];

/** Grid barriers a chain's dispatch passes (after O, after gate|up): its arrivals are this times its workgroups. */
export const CHAIN_BARRIERS = 2;

/** The three products' MatmulParams for `t` rows of x, as the engine's dispatches of them take. */
export function chainProducts(shape: FfnChainShape, t: number, strides: { x: number; xq: (k: number) => number }): MatmulParams[] {
  const { dim, qDim, ffn, eps } = shape;
  const norm: TailParams = { n: dim, inOffset: 0, inStride: strides.x, eps };
  return [
    { t, n: dim, k: qDim, xStride: strides.xq(qDim), yStride: strides.x, accumulate: true, tail: norm },
    { t, n: 2 * ffn, k: dim, xStride: strides.xq(dim), yStride: 2 * ffn, tail: { n: ffn, inOffset: 0, inStride: 2 * ffn, up: ffn } },
    { t, n: dim, k: ffn, xStride: strides.xq(ffn), yStride: strides.x, accumulate: true, tail: norm },
  ];
}

/** The `phases` words for rows of x 1..maxT: a triple of Params per count, triple t - 1 at Params 3(t - 1). */
export function chainPhaseWords(ctx: KernelContext, shape: FfnChainShape, maxT: number, strides: { x: number; xq: (k: number) => number }): Uint32Array {
  return matmulParamWords(ctx, Array.from({ length: maxT }, (_, i) => chainProducts(shape, i + 1, strides)).flat());
}

/**
 * The loop passes one invocation (a workgroup: one SIMD vector) of the chain takes at most before its
 * barriers, as llvmpipe counts them (chain.ts productLoopPasses): a persistent workgroup runs all of a
 * product's virtual workgroups, so where the engine's dispatches count one's loops, this counts them all.
 * A tail's loops per row of x: the norm's loop over its group's vec4s, a q8_K group's 64-pass maximum and
 * the finishing loops over the groups and blocks; the activation's q8_K group.
 */
export function chainLoopPasses(ctx: KernelContext, shape: FfnChainShape, t: number, workgroups: number): number {
  const { dim, qDim, ffn, modes } = shape;
  const group = (mode: XqMode) => (mode === 'q8_K' ? 256 : 32);
  const put = (mode: XqMode) => (mode === 'q8_K' ? 65 : 0);
  const norm = (mode: XqMode) => group(mode) / 4 + 1 + put(mode) + dim / group(mode) + 1 + dim / 32 + 1;
  return (
    productLoopPasses(ctx, { n: dim, k: qDim, type: shape.types.o }, t, workgroups, norm(modes.ffnNorm)) +
    productLoopPasses(ctx, { n: 2 * ffn, k: dim, type: shape.types.gateUp }, t, workgroups, put(modes.act)) +
    productLoopPasses(ctx, { n: dim, k: ffn, type: shape.types.down }, t, workgroups, norm(modes.nextNorm))
  );
}

/** The passes of llvmpipe's loop budget a chain of this shape leaves its barriers' waits. */
export function chainSpinPasses(ctx: KernelContext, shape: FfnChainShape, t: number, workgroups: number): number {
  return spinPassesLeft(ctx, chainLoopPasses(ctx, shape, t, workgroups));
}

export class FfnChainKernel {
  readonly kernel: CompiledKernel;
  readonly label: string;

  constructor(
    ctx: KernelContext,
    readonly shape: FfnChainShape,
    readonly t: number,
    readonly workgroups: number,
    spinBudget?: number,
  ) {
    const { types, modes } = shape;
    if (!ctx.caps.orderedAtomics || !ctx.caps.weightTextures) throw new Error('ffn-chain: needs llvmpipe (atomics that order the stores before them, weights in textures)');
    const lanes = chainLanes(ctx);
    this.label = `ffn-chain-${typeName(types.o)}-${typeName(types.gateUp)}-${typeName(types.down)}-t${t}-w${workgroups}`;
    // The barriers' waits share what llvmpipe's loop budget leaves after the products (64 passes spare).
    const left = chainSpinPasses(ctx, shape, t, workgroups);
    if (left < MIN_SPIN_PASSES) throw new Error(`${this.label}: the products take all but ${left} of the adapter's ${ctx.caps.loopBudget} loop passes, too few for the barriers`);
    const budget = spinBudget ?? left;
    // Each link's pipeline constants (its workgroup, the tail's group and rows), under its suffix.
    const links = {
      o: { type: types.o, tail: { kind: 'norm-q8', mode: modes.ffnNorm } as ProductTail },
      gu: { type: types.gateUp, tail: { kind: 'glu-q8', mode: modes.act, activation: shape.activation } as ProductTail },
      dn: { type: types.down, tail: { kind: 'norm-q8', mode: modes.nextNorm } as ProductTail },
    };
    const suffixed = (l: { type: GgmlType; tail: ProductTail }, suffix: string) =>
      Object.fromEntries(Object.entries({ WG: lanes, ...tailConstants(l.tail, rowsPerInvocationFor(l.type)) }).map(([k, v]) => [`${k}${suffix}`, v]));
    const o = productLink(ctx, types.o, t, links.o.tail, '_o', { 0: { binding: 0 }, 1: { binding: 3 }, 2: { binding: 4 }, 3: { binding: 5 }, 4: { binding: 6 }, 5: { binding: 7 } });
    const gu = productLink(ctx, types.gateUp, t, links.gu.tail, '_gu', { 0: { binding: 1 }, 1: { binding: 7, sameAs: 'xq_o' }, 2: { binding: 8 }, 3: { binding: 5, sameAs: 'tail_count_o' }, 4: { binding: 9 } });
    const dn = productLink(ctx, types.down, t, links.dn.tail, '_dn', { 0: { binding: 2 }, 1: { binding: 9, sameAs: 'xq_gu' }, 2: { binding: 4, sameAs: 'y_o' }, 3: { binding: 5, sameAs: 'tail_count_o' }, 4: { binding: 10 }, 5: { binding: 7, sameAs: 'xq_o' } });
    // matmul-common.wgsl's Params, declared by the first link only.
    const withoutParams = (code: string) => code.replace(/struct Params \{[^}]*\}/, '');
    const rows = `const ROWS_O: u32 = ${rowsPerInvocationFor(types.o)}u;\nconst ROWS_GU: u32 = ${rowsPerInvocationFor(types.gateUp)}u;\nconst ROWS_DN: u32 = ${rowsPerInvocationFor(types.down)}u;\n`;
    const main = chainWgsl.replace('CHAIN_PHASES', String(PHASES));
    this.kernel = ctx.kernel({
      label: this.label,
      code: wgsl(o, withoutParams(gu), withoutParams(dn), rows, gridWgsl(GRID), main),
      bindings: BINDINGS,
      constants: { WG: lanes, ...suffixed(links.o, '_o'), ...suffixed(links.gu, '_gu'), ...suffixed(links.dn, '_dn'), WORKGROUPS: workgroups, SPIN_BUDGET: budget },
    });
  }

  bind(b: FfnChainBuffers): GPUBindGroup {
    return this.kernel.bind([b.o, b.gateUp, b.down, b.attnQ8, b.x, b.counters, b.ffnNorm, b.xNormQ8, b.gateUpOut, b.actQ8, b.nextNorm, b.phases, b.grid]);
  }

  /** One dispatch; `gridSlot`: its arrival word's place among the step's chains (chainGridBytes). */
  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, gridSlot: number): void {
    const s = arena.slot();
    arena.u32[s] = gridSlot;
    arena.u32[s + 1] = 3 * (this.t - 1);
    arena.u32[s + 2] = CHAIN_CHECK_PASSES;
    arena.dispatch(pass, this.kernel, group, s, this.workgroups, 1);
  }
}
