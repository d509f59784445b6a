/**
 * Rows of x quantized to int8 blocks of 32 with a scale each (quantize-x-q8.wgsl), read by the CPU
 * rasterisers' block-walking products (Q8_0, Q4_0, Q4_K, Q6_K) in place of f32 x.
 */
import block from './quantize-x-block.wgsl?raw';
import math from './quantize-q8-math.wgsl?raw';
import source from './quantize-x-q8.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const WG = 64;

/** Writing rows of quantized x (quantize-x-block.wgsl) with the quantization arithmetic it shares (quantize-q8-math.wgsl). */
export const Q8_BLOCK_WGSL = wgsl(math, block);

/**
 * How activations are quantized for a weight type's products, as llama.cpp's CPU backend does
 * (quantize-x-block.wgsl): 'q8_0' for Q8_0 and Q4_0 (32 values share an f16 scale), 'q8_K' for K-quants
 * (256 values share an f32 scale from their signed maximum).
 */
export type XqMode = 'q8_0' | 'q8_K';

/** Values that share one scale in `mode`: rows must hold a whole number of them. */
export function xqGroup(mode: XqMode): number {
  return mode === 'q8_K' ? 256 : 32;
}

/**
 * vec4s of one quantized row of k elements (k a multiple of 32). A row's blocks go in groups of 4: the
 * group's 8 vec4s of quants (two a block), then one vec4 of its 4 scales; 9 vec4s for 128 values, where
 * a vec4 of padding beside each block's scale took 12. So a 1536-wide row is 1728 bytes and 32 of them
 * fit one 64 KiB uniform window (matmul-x-window.ts): the tiled down product of a 64-token step runs two
 * dispatches of 6 workgroups instead of four of 3, which two CPU threads shared 2:1.
 */
export function q8RowVec4s(k: number): number {
  return Math.ceil(k / 128) * 9;
}

/**
 * Where block b of a quantized row lies, in vec4s from the row's start: its two vec4s of quants, and the
 * vec4 holding its scale (an f32's bits) in component `component`. The WGSL writer (put_q8_quants,
 * quantize-x-block.wgsl) and reader (x_block, matmul-x-block-q8.wgsl) compute the same.
 */
export function q8BlockLayout(b: number): { quants: number; scale: number; component: number } {
  const group = Math.floor(b / 4) * 9;
  return { quants: group + (b % 4) * 2, scale: group + 8, component: b % 4 };
}

export interface QuantizeXParams {
  tokens: number;
  k: number;
  /** Element offset of x[0, 0] and elements between rows of x; multiples of 4. */
  xOffset?: number;
  xStride?: number;
}

/** Bindings: x (read, f32), xq (write, q8RowVec4s(k) vec4s per row). */
export class QuantizeXKernel {
  readonly kernel: CompiledKernel;

  constructor(
    ctx: KernelContext,
    readonly mode: XqMode = 'q8_0',
  ) {
    this.kernel = ctx.kernel({ label: `quantize-x-${mode}`, code: wgsl(source, Q8_BLOCK_WGSL), bindings: ['read', 'write'], constants: { WG, XQ_GROUP: xqGroup(mode) } });
  }

  bind(x: GPUBuffer, xq: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([x, xq]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: QuantizeXParams): void {
    const xOffset = p.xOffset ?? 0;
    const xStride = p.xStride ?? p.k;
    const per = xqGroup(this.mode);
    if (p.k % per !== 0 || xOffset % 4 !== 0 || xStride % 4 !== 0) throw new Error(`quantize-x: k=${p.k}, x offset ${xOffset} and stride ${xStride} must be multiples of ${per}, 4 and 4`);
    const s = arena.slot();
    arena.u32[s] = p.tokens;
    arena.u32[s + 1] = p.k;
    arena.u32[s + 2] = xOffset;
    arena.u32[s + 3] = xStride;
    arena.u32[s + 4] = q8RowVec4s(p.k);
    const [gx, gy] = grid2d(Math.ceil((p.tokens * (p.k / per)) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
