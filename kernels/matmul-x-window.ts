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
 * not. Such steps keep storage x: splitting them into one dispatch per window made the
 * step's products 6-14% slower (the down product's 16-token dispatches have 3 workgroups for 2 threads).
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
  return ctx.storage(label, Math.max(bytes, xWindowBytes(ctx.caps)), undefined, GPUBufferUsage.UNIFORM);
}

/** `common` (matmul-common.wgsl) with x declared as a uniform array of `vec4s` vec4s. */
export function withUniformX(common: string, vec4s: number): string {
  if (!common.includes(STORAGE_X)) throw new Error('matmul-x-window: matmul-common.wgsl no longer declares x as expected');
  return common.replace(STORAGE_X, `@group(0) @binding(1) var<uniform> x: array<vec4f, ${vec4s}>;`);
}

/** The tiled kernel widths that read x through a window (matmul.ts: 8 and 16 tokens an invocation). */
export type XWidth = 'narrow' | 'wide';

/**
 * The x windows of a product's bound buffers. `attach` records the buffers behind a bind group of the
 * storage-x kernels; `window` then gives a width's uniform-x kernel and the window bind group (made once
 * and kept; both widths' kernels share its layout), or undefined where x cannot be read through one: a
 * buffer without uniform usage, an x offset, or a step whose x does not fit one window.
 */
export class XWindows {
  private readonly attached = new WeakMap<GPUBindGroup, { buffers: readonly BindingResource[]; window?: GPUBindGroup }>();
  private readonly size: number;

  constructor(
    ctx: KernelContext,
    /** Each width's windowed kernel, compiled on first use. */
    private readonly kernels: Record<XWidth, () => CompiledKernel>,
  ) {
    this.size = xWindowBytes(ctx.caps);
  }

  attach(group: GPUBindGroup, buffers: readonly BindingResource[]): void {
    this.attached.set(group, { buffers });
  }

  window(group: GPUBindGroup, width: XWidth, t: number, xOffset: number, xStride: number): { kernel: CompiledKernel; group: GPUBindGroup } | undefined {
    const a = this.attached.get(group);
    const x = a?.buffers[1];
    const size = this.size;
    if (!a || !x || 'buffer' in x || isTexture(x) || (x.usage & GPUBufferUsage.UNIFORM) === 0 || xOffset !== 0 || t * xStride * 16 > size || x.size < size) return undefined;
    const kernel = this.kernels[width]();
    a.window ??= kernel.bind(
      a.buffers.map((b, i) => (i === 1 ? { buffer: x, offset: 0, size } : b)),
      `${kernel.label} x window`,
    );
    return { kernel, group: a.window };
  }
}
