/**
 * Quantized x through a texture, for the CPU rasterisers' tiled products (matmul.ts) on llvmpipe.
 *
 * Every invocation of a tiled product reads the same x addresses, and llvmpipe runs each of those loads
 * lane by lane: a uniform-buffer load (matmul-x-window.ts) as a gather of one word per lane and
 * component, a perf profile's largest cost after the multiply-adds (22% of the tiled kernel's samples,
 * kernels/README.md). An image load (a read-only storage texture) fetches a lane's whole vec4 at once, as
 * the weights are read (runtime/weights.ts). The writers of quantized x store single words of a vec4 (a
 * block's scale), which a texture cannot take, so x stays in its buffer and is copied into a texture
 * just before each product that reads it: the product ends the step's pass for the copy (ParamArena
 * copyBetween) and dispatches its texture kernel. One step's x fits one texture, so the product runs one
 * dispatch where a uniform window would take several. 64-token TTFT on llvmpipe, SmolLM2-135M Q8_0:
 * 0.87x with the copies (13 interleaved rounds in one process, 11 faster; 0.84x before the copies were
 * written, with the texture left unfilled).
 *
 * Where a step cannot copy between dispatches (its arena has no open step) or x is bound at an offset,
 * the product reads x through a window or storage as before.
 */
import type { ParamArena } from './runtime/arena.ts';
import type { BindingResource, CompiledKernel, KernelContext } from './runtime/context.ts';
import { copyTexels, isTexture, texelsWgsl, texelTexture } from './runtime/weights.ts';
import { replaceStorageX } from './matmul-x-window.ts';

/**
 * `common` (matmul-common.wgsl) with x read through a texture instead of its buffer: binding 1 as the
 * texture `x_tex` and xq_ld(i), vec4 i of quantized x (in place of matmul-xq-buffer.wgsl's).
 */
export function withTextureX(common: string): string {
  return replaceStorageX(common, texelsWgsl('x_tex', 1, 'xq_ld'));
}

/** The texture a quantized-x buffer is copied into: whole rows of WEIGHT_TEXTURE_WIDTH texels covering the buffer. */
const textures = new WeakMap<GPUBuffer, GPUTexture>();

function textureFor(device: GPUDevice, x: GPUBuffer): GPUTexture {
  let texture = textures.get(x);
  if (!texture) {
    texture = texelTexture(device, `${x.label}.texture`, x.size / 16);
    textures.set(x, texture);
  }
  return texture;
}

/**
 * The x textures of a product's bound buffers. `attach` records the buffers behind a bind group of the
 * buffer-x kernels; `prepare` then copies a step's x into the texture of its buffer and gives the texture
 * kernel of the asked width and the bind group that binds the texture (made once and kept: both widths'
 * kernels share its layout), or undefined where
 * x cannot go through one: no open step to copy in, x bound as a range, or at an offset.
 */
export class XTextures {
  private readonly attached = new WeakMap<GPUBindGroup, { buffers: readonly BindingResource[]; bound?: GPUBindGroup }>();

  constructor(
    private readonly ctx: KernelContext,
    /** The texture kernel storing four rows of y at once (y4) or one. */
    private readonly kernels: (y4: boolean, wide: boolean) => CompiledKernel,
  ) {}

  attach(group: GPUBindGroup, buffers: readonly BindingResource[]): void {
    this.attached.set(group, { buffers });
  }

  prepare(arena: ParamArena, group: GPUBindGroup, y4: boolean, t: number, xOffset: number, xStride: number, wide = false): { kernel: CompiledKernel; group: GPUBindGroup } | undefined {
    const a = this.attached.get(group);
    const x = a?.buffers[1];
    if (!a || !arena.copiesBetween || xOffset !== 0 || x === undefined || 'buffer' in x || isTexture(x)) return undefined;
    const texels = t * xStride;
    if (texels * 16 > x.size) throw new Error(`matmul-x-texture: ${t} rows of ${xStride} vec4s are past the end of ${x.label} (${x.size} bytes)`);
    const texture = textureFor(this.ctx.device, x);
    arena.copyBetween((encoder) => copyTexels(encoder, x, texture, texels));
    const kernel = this.kernels(y4, wide);
    a.bound ??= kernel.bind(
      a.buffers.map((b, i) => (i === 1 ? texture : b)),
      `${kernel.label} x texture`,
    );
    return { kernel, group: a.bound };
  }
}
