import source from './rmsnorm.wgsl?raw';
import serial from './rmsnorm-serial.wgsl?raw';
import serialVec4 from './rmsnorm-serial-vec4.wgsl?raw';
import serialQ8 from './rmsnorm-serial-q8.wgsl?raw';
import ioQ8 from './rmsnorm-io-q8.wgsl?raw';
import ioQ8Gather from './rmsnorm-io-q8-gather.wgsl?raw';
import rows from './rmsnorm-rows.wgsl?raw';
import ioFile from './rmsnorm-io.wgsl?raw';
import ioInPlace from './rmsnorm-io-inplace.wgsl?raw';
import ioGather from './rmsnorm-io-gather.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';
import { xqGroup, type XqMode, Q8_BLOCK_WGSL } from './quantize-x.ts';

const SERIAL_WG = 16;

export interface RmsNormParams {
  rows: number;
  dim: number;
  eps: number;
  xOffset?: number;
  /** Ignored in place (y is x). */
  yOffset?: number;
  /**
   * Rows per group (default 1): row r is row r % group of group r / group, and a group's rows are adjacent.
   * Per-head norms use group = heads per token, with strides = the token stride.
   */
  group?: number;
  /** Elements between groups in x (default group × dim). */
  xStride?: number;
  /** Elements between groups in y (default group × dim; in place, xStride). */
  yStride?: number;
  /** Rows from this index within a group on use the second of two stacked weight vectors (default: none do). */
  wSplit?: number;
}

/**
 * RMSNorm of `rows` rows of length `dim`. Bindings: x (read), weight (read), y (write); in place: x
 * (read-write), weight (read). The weight holds `dim` values, or 2 × dim when wSplit is used.
 */
export class RmsNormKernel {
  readonly kernel: CompiledKernel;
  /** The serial kernel with vec4 accesses, for rows whose length, offsets and strides are multiples of 4. */
  private readonly vec4Kernel: CompiledKernel | undefined;
  /** One invocation per row without barriers, for CPU adapters; else a workgroup per row. */
  readonly serial: boolean;
  readonly inPlace: boolean;
  /**
   * `io`: 'out' reads x and writes y; 'in-place' normalizes x where it lies; 'gather' writes y[r] =
   * norm(x[idx[r]]) (a fourth binding, idx), picking rows and norming them in one pass; 'q8' and
   * 'gather-q8' (CPU adapters) write y quantized to int8 blocks of 32 (quantize-x.ts's layout, in mode
   * `xq`) for the products that read quantized x, and need dim to be whole groups of that mode.
   */
  constructor(
    ctx: KernelContext,
    variant: 'serial' | 'workgroup' = ctx.caps.software ? 'serial' : 'workgroup',
    readonly io: 'out' | 'in-place' | 'gather' | 'q8' | 'gather-q8' = 'out',
    /** With quantized output: quantized for which weights' products (quantize-x.ts). */
    readonly xq: XqMode = 'q8_0',
  ) {
    this.serial = variant === 'serial';
    this.inPlace = io === 'in-place';
    const label = `rmsnorm${this.serial ? '-serial' : ''}${io === 'out' ? '' : `-${io.replace('q8', xq)}`}`;
    const gathers = io === 'gather' || io === 'gather-q8';
    const bindings = this.inPlace ? (['write', 'read'] as const) : gathers ? (['read', 'read', 'write', 'read'] as const) : (['read', 'read', 'write'] as const);
    if (io === 'q8' || io === 'gather-q8') {
      if (!this.serial) throw new Error('rmsnorm: quantized output is for CPU adapters (the serial kernel)');
      this.kernel = ctx.kernel({ label, code: wgsl(serialQ8, rows, Q8_BLOCK_WGSL, io === 'q8' ? ioQ8 : ioQ8Gather), bindings, constants: { WG: SERIAL_WG, XQ_GROUP: xqGroup(xq) } });
      return;
    }
    const io4 = { out: ioFile, 'in-place': ioInPlace, gather: ioGather }[io];
    this.kernel = ctx.kernel({ label, code: wgsl(this.serial ? serial : source, rows, io4), bindings, constants: { WG: this.serial ? SERIAL_WG : 64 } });
    if (this.serial) this.vec4Kernel = ctx.kernel({ label: `${label}-vec4`, code: wgsl(serialVec4, rows, io4), bindings, constants: { WG: SERIAL_WG } });
  }

  /** Out of place: bind(x, weight, y). In place: bind(x, weight). Gather: bind(x, weight, y, idx). */
  bind(x: GPUBuffer, weight: GPUBuffer, y?: GPUBuffer, idx?: GPUBuffer): GPUBindGroup {
    if ((y === undefined) !== this.inPlace) throw new Error(`${this.kernel.label}: ${this.inPlace ? 'in place, so no y buffer' : 'needs a y buffer'}`);
    const gathers = this.io === 'gather' || this.io === 'gather-q8';
    if ((idx !== undefined) !== gathers) throw new Error(`${this.kernel.label}: ${gathers ? 'needs the row indices' : 'takes no row indices'}`);
    return this.kernel.bind(y ? (idx ? [x, weight, y, idx] : [x, weight, y]) : [x, weight]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: RmsNormParams): void {
    const g = p.group ?? 1;
    const xStride = p.xStride ?? g * p.dim;
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.dim;
    arena.f32[s + 2] = p.eps;
    arena.u32[s + 3] = p.xOffset ?? 0;
    arena.u32[s + 4] = this.inPlace ? (p.xOffset ?? 0) : (p.yOffset ?? 0);
    arena.u32[s + 5] = g;
    arena.u32[s + 6] = xStride;
    arena.u32[s + 7] = this.inPlace ? xStride : (p.yStride ?? g * p.dim);
    arena.u32[s + 8] = p.wSplit ?? g;
    const [gx, gy] = grid2d(this.serial ? Math.ceil(p.rows / SERIAL_WG) : p.rows);
    const by4 = [p.dim, p.xOffset ?? 0, p.yOffset ?? 0, xStride, p.yStride ?? g * p.dim].every((v) => v % 4 === 0);
    if (this.io.endsWith('q8') && !(by4 && p.dim % xqGroup(this.xq) === 0 && g === 1)) throw new Error(`${this.kernel.label}: dim ${p.dim} must be a multiple of ${xqGroup(this.xq)} and x's offset and stride of 4, in groups of one row`);
    arena.dispatch(pass, by4 && this.vec4Kernel ? this.vec4Kernel : this.kernel, group, s, gx, gy);
  }
}
