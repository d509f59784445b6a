/**
 * Quantized x through uniform windows, for the CPU rasterisers' tiled products (matmul.ts).
 *
 * Every invocation of a tiled product reads the same x addresses (its workgroup's tokens), and llvmpipe
 * (Mesa 22.3) compiles a storage load into a loop over the SIMD lanes with an exec-mask test and a bounds
 * branch per lane and component, while a uniform-buffer load is a branchless gather. The tiled Q8_0
 * products of 16 tokens, SmolLM2-135M shapes, took 9-13% less time with x bound as a uniform buffer
 * (8 interleaved pairs); batched decode (the 8-token tiled kernel) of 4 sequences +9-10% aggregate.
 * A uniform binding holds at most maxUniformBufferBindingSize (64 KiB on llvmpipe): 64 tokens of a
 * 576-wide x (SmolLM2-135M's QKV, O and gate|up) fit one window, of a 1536-wide x (its down product)
 * not (32 rows of it do: quantize-x.ts's rows of 36 bytes a block). Such a step runs one dispatch per
 * window-full of whole 16-token tiles, each window bound at its rows' start (MatMulKernel.encode,
 * rowsPerWindow): a 64-token step's products on llvmpipe 0.92x the time (12 interleaved rounds) with
 * 16-row windows, and 0.76-0.80x again once the rows shrank to fit 32. When this was first tried, with
 * weights in storage buffers, it was 6-14% slower; the weights' texture loads (runtime/weights.ts) made
 * the x loads the larger share. A window that holds fewer than 16 rows (x wider than about 3600) keeps
 * storage x.
 *
 * Decode (matrix-vector) products keep storage x: there x is a small share of the loads (measured within
 * noise).
 */
import type { GpuCaps } from './runtime/caps.ts';
import type { BindingResource, CompiledKernel, KernelContext } from './runtime/context.ts';
import { isTexture } from './runtime/weights.ts';

/** The declaration of x in matmul-common.wgsl that the windowed kernels replace. */
const STORAGE_X = '@group(0) @binding(1) var<storage, read> x: array<vec4f>;';

/** Bytes of one uniform window of x on this device (0 where windows are too small to use). */
export function xWindowBytes(caps: GpuCaps): number {
  const bytes = Math.floor(Math.min(caps.maxUniformBinding, 65536) / 256) * 256;
  return bytes >= 16384 ? bytes : 0;
}

/**
 * A buffer for `bytes` of quantized x that products may also read through a uniform window: uniform usage,
 * and at least one window long (the binding is the whole window).
 */
export function xq8Buffer(ctx: KernelContext, label: string, bytes: number): GPUBuffer {
  // A window one past any whole-window split of its rows still fits (XWindows.window at an offset).
  return ctx.storage(label, bytes + xWindowBytes(ctx.caps), undefined, GPUBufferUsage.UNIFORM);
}

/** `common` (matmul-common.wgsl) with x's storage declaration replaced by `declaration`. */
export function replaceStorageX(common: string, declaration: string): string {
  if (!common.includes(STORAGE_X)) throw new Error('matmul-x-window: matmul-common.wgsl no longer declares x as expected');
  return common.replace(STORAGE_X, declaration);
}

/** `common` (matmul-common.wgsl) with x declared as a uniform array of `vec4s` vec4s. */
export function withUniformX(common: string, vec4s: number): string {
  return replaceStorageX(common, `@group(0) @binding(1) var<uniform> x: array<vec4f, ${vec4s}>;`);
}

/** The tiled kernel widths that read x through a window (matmul.ts: 8 and 16 tokens an invocation). */
export type XWidth = 'narrow' | 'wide';

/** A windowed kernel of a width, storing four rows of y at once (`y4`, matmul-store4.wgsl) or one. */
export type WindowedKernel = (width: XWidth, y4: boolean) => CompiledKernel;

/**
 * The x windows of a product's bound buffers. `attach` records the buffers behind a bind group of the
 * storage-x kernels; `window` then gives a width's uniform-x kernel and the window bind group (made once
 * and kept; every windowed kernel shares its layout), or undefined where x cannot be read through one: a
 * buffer without uniform usage, an x offset, or a step whose x does not fit one window.
 */
export class XWindows {
  private readonly attached = new WeakMap<GPUBindGroup, { buffers: readonly BindingResource[]; windows: Map<number, GPUBindGroup> }>();
  private readonly size: number;
  private readonly alignment: number;

  constructor(
    ctx: KernelContext,
    /** Each width's windowed kernels, compiled on first use. */
    private readonly kernels: WindowedKernel,
  ) {
    this.size = xWindowBytes(ctx.caps);
    this.alignment = ctx.caps.minUniformOffsetAlignment;
  }

  /**
   * Rows of x (each `xStride` vec4s) one window holds, a multiple of `multiple`, where a whole step's do
   * not fit: the product then runs one dispatch per window (0: no window holds `multiple` rows, or a
   * window's start would not be aligned).
   */
  rowsPerWindow(xStride: number, multiple: number): number {
    const rows = Math.floor(this.size / (xStride * 16) / multiple) * multiple;
    return rows > 0 && (rows * xStride * 16) % this.alignment === 0 ? rows : 0;
  }

  attach(group: GPUBindGroup, buffers: readonly BindingResource[]): void {
    this.attached.set(group, { buffers, windows: new Map() });
  }

  /** Whether the x bound in `group` can be read through windows (a buffer with uniform usage). */
  windowable(group: GPUBindGroup): boolean {
    const x = this.attached.get(group)?.buffers[1];
    return x !== undefined && !('buffer' in x) && !isTexture(x) && (x.usage & GPUBufferUsage.UNIFORM) !== 0;
  }

  /**
   * The window starting at vec4 `windowStart` of x (0, or where rowsPerWindow split a step; aligned), whose
   * kernel reads x offsets relative to it.
   */
  window(group: GPUBindGroup, width: XWidth, y4: boolean, t: number, xOffset: number, xStride: number, windowStart = 0): { kernel: CompiledKernel; group: GPUBindGroup } | undefined {
    const a = this.attached.get(group);
    const size = this.size;
    const start = windowStart * 16;
    if (!a || !this.windowable(group) || xOffset !== 0 || t * xStride * 16 > size || start % this.alignment !== 0) return undefined;
    const x = a.buffers[1] as GPUBuffer;
    if (x.size < start + size) return undefined;
    const kernel = this.kernels(width, y4);
    let bound = a.windows.get(start);
    if (!bound) {
      bound = kernel.bind(
        a.buffers.map((b, i) => (i === 1 ? { buffer: x, offset: start, size } : b)),
        `${kernel.label} x window at ${start}`,
      );
      a.windows.set(start, bound);
    }
    return { kernel, group: bound };
  }
}
