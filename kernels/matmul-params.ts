/** Parameters shared by the weight-product kernels (matvec-*.wgsl, matmul-*.wgsl; struct in matmul-common.wgsl). */
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type BindingKind, type BindingResource, type CompiledKernel, type KernelContext, type KernelSpec } from './runtime/context.ts';
import type { WeightStore } from './runtime/weights.ts';
import store from './matmul-store.wgsl?raw';
import storeBias from './matmul-store-bias.wgsl?raw';
import store4 from './matmul-store4.wgsl?raw';
import store4Bias from './matmul-store4-bias.wgsl?raw';
import xAligned from './matmul-x-aligned.wgsl?raw';
import xUnaligned from './matmul-x-unaligned.wgsl?raw';
import xGlu from './matmul-x-glu.wgsl?raw';
import { activationWgsl, type Activation } from './activation.ts';
import { tailBindings, tailSuffix, type ProductTail, type TailParams } from './matvec-tail.ts';
import { writeRopeSettings } from './rope.ts';

export interface MatmulParams {
  /** Rows of x and of y (tokens). */
  t: number;
  /** Rows of W in the bound buffer: the whole matrix, or one shard's rows. */
  n: number;
  /** Elements per row of W and of x. */
  k: number;
  /** Element offset of x[0, 0] in the x buffer (default 0). */
  xOffset?: number;
  /** Elements between rows of x (default k). */
  xStride?: number;
  /** Element offset of y[0, 0] in the y buffer (default 0). */
  yOffset?: number;
  /** Elements between rows of y (default n; give the full width when W is sharded and t > 1). */
  yStride?: number;
  /** First row of W in the bound shard: results go to y columns rowOffset .. rowOffset + n (default 0). */
  rowOffset?: number;
  /** y += W x instead of y = W x (a fused residual add). */
  accumulate?: boolean;
  /** Kernels built with a bias: index in the bias buffer of W's row 0 (default 0); the shard's rowOffset is added. */
  biasOffset?: number;
  /** Gated kernels (ProductOptions.glu): elements from each gate value in x to its up value. */
  gluUp?: number;
  /** Norm-fused kernels (ProductOptions.norm): the RMSNorm epsilon. */
  normEps?: number;
  /** Kernels built with a tail (ProductOptions.tail): run it in this dispatch, reading its input as given. */
  tail?: TailParams;
}

/** Words of the Params struct (matmul-common.wgsl). */
export const MATMUL_PARAM_WORDS = 27;

/** Take a slot and write the Params struct; returns the slot's word index. */
export function writeMatmulParams(arena: ParamArena, p: MatmulParams): number {
  if (p.t < 1 || p.n < 1 || p.k < 1) throw new Error(`matmul: empty product t=${p.t} n=${p.n} k=${p.k}`);
  if ((p.rowOffset ?? 0) > 0 && p.t > 1 && p.yStride === undefined) {
    throw new Error('matmul: a sharded product over several rows of x needs yStride (the full output width)');
  }
  const s = arena.slot();
  arena.u32[s] = p.t;
  arena.u32[s + 1] = p.n;
  arena.u32[s + 2] = p.k;
  arena.u32[s + 3] = p.accumulate ? 1 : 0;
  arena.u32[s + 4] = p.xOffset ?? 0;
  arena.u32[s + 5] = p.xStride ?? p.k;
  arena.u32[s + 6] = (p.yOffset ?? 0) + (p.rowOffset ?? 0);
  arena.u32[s + 7] = p.yStride ?? p.n;
  arena.u32[s + 8] = (p.biasOffset ?? 0) + (p.rowOffset ?? 0);
  arena.u32[s + 9] = p.gluUp ?? 0;
  arena.f32[s + 10] = p.normEps ?? 0;
  if (p.tail) {
    arena.u32[s + 11] = 1;
    arena.f32[s + 12] = p.tail.eps ?? 0;
    arena.u32[s + 13] = p.tail.n;
    arena.u32[s + 14] = p.tail.inOffset;
    arena.u32[s + 15] = p.tail.inStride;
    arena.u32[s + 16] = p.tail.up ?? 0;
    const r = p.tail.rope;
    if (r) {
      arena.u32[s + 17] = r.heads;
      arena.u32[s + 18] = r.kvHeads;
      arena.u32[s + 19] = r.headDim;
      arena.u32[s + 20] = r.pageSize;
      arena.u32[s + 21] = r.maxPages;
      writeRopeSettings(arena, s + 22, r);
    }
  }
  return s;
}

export interface ProductOptions {
  /**
   * Add a per-row bias as results are stored: y[t, n] (+)= (W x)[t, n] + bias[n]. Such a kernel takes a
   * fourth binding, the bias (read, f32, one value per row of the whole matrix).
   */
  bias?: boolean;
  /**
   * The product's input is act(gate) * up of a fused gate|up buffer, computed as x is read (the FFN's
   * down projection with its SwiGLU/GeGLU folded in): x[t, k] = act(gate) * up, gate at the x offset,
   * up `gluUp` elements further. Offsets, strides and gluUp must be multiples of 4.
   */
  glu?: Activation;
  /**
   * The product's input is RMSNorm(x) with a norm weight bound after the other buffers (the norm before
   * the QKV and gate|up products, folded into them). Matrix-vector GPU variants only (coop, subgroup),
   * so decode-sized batches; x offsets and k must be multiples of 4.
   */
  norm?: boolean;
  /**
   * x is rows quantized to int8 blocks (quantize-x.ts's layout, written by QuantizeXKernel or the 'q8'
   * RmsNormKernel): the params' x offset and stride count vec4s (stride q8RowVec4s(k)). Q8_0 weights on
   * CPU rasterisers' products only (the rows matrix-vector kernel and the tiled regs kernel).
   */
  xq8?: boolean;
  /**
   * CPU rasterisers' matrix-vector kernels (variant 'rows') run this pass after the product in its last
   * invocation, in dispatches whose params ask for it (matvec-tail.ts); its buffers are bound last.
   */
  tail?: ProductTail;
  /** CPU rasterisers' tiled kernel (matmul.ts): weight rows per invocation, TILED_ROWS (default 16; tiledRowsFor). */
  tiledRows?: number;
  /**
   * GPU matrix-vector variants (coop, subgroup): invocations per workgroup and weight rows per workgroup,
   * for tuning on a GPU host (bench/gpu/lab.ts); default 64 invocations, one row a subgroup (coop: 4 rows).
   * `units` (subgroup variant, 1-4, default 1): weight units each lane loads before it uses any.
   */
  gpuGroup?: { wg: number; rows: number; units?: number };
  /**
   * GPU Q8_0 matrix-vector products (variant dp4a, matvec.ts): quantize x to int8 blocks and sum with
   * dot4I8Packed where the device offers it (default true); false keeps the float subgroup kernel.
   */
  int8Dot?: boolean;
  /**
   * GPU tiled kernel 'tiles-vec4' (matmul.ts): the fewest workgroups a dispatch runs it with; smaller
   * grids take the 32 x 64 tile (default VEC4_MIN_WORKGROUPS; tests and the lab set 0 to run it always).
   */
  vec4MinWorkgroups?: number;
  /**
   * The int8 tile 'tiles-dp4a': blocks of 32 along k a step stages (2 by default; 4 for the lab: 28 KB of
   * workgroup memory, half the barriers a row of k).
   */
  int8TileBlocks?: 2 | 4;
  /** The int8 tile: tokens a tile (32 by default; 64 for the lab: each staged weight block serves twice the tokens, 18 KB). */
  int8TileTokens?: 32 | 64;
}

/**
 * The store() a product kernel is built with (and store4(), for kernels that store four rows of y at
 * once: matmul-store4.wgsl), and its bindings: W, x, y, then the bias, the norm weight and the tail's
 * buffers, each if it has them; `tailBinding`, the tail's first.
 */
export function productStore(opts: ProductOptions): { code: string; code4: string; bindings: readonly BindingKind[]; suffix: string; tailBinding: number } {
  const glu = opts.glu ? `-glu-${opts.glu}` : '';
  const after = `${opts.norm ? '-norm' : ''}${opts.xq8 ? '-xq8' : ''}${tailSuffix(opts.tail)}`;
  const own: BindingKind[] = ['weights', 'read', 'write', ...(opts.bias ? (['read'] as const) : []), ...(opts.norm ? (['read'] as const) : [])];
  return { code: opts.bias ? storeBias : store, code4: opts.bias ? store4Bias : store4, bindings: [...own, ...tailBindings(opts.tail)], suffix: `${opts.bias ? '-bias' : ''}${glu}${after}`, tailBinding: own.length };
}

/** The declaration of y in matmul-common.wgsl, which kernels storing four rows at once replace (withVec4Y). */
const SCALAR_Y = '@group(0) @binding(2) var<storage, read_write> y: array<f32>;';

/** `common` (matmul-common.wgsl) with y declared as vec4s, for store4() (matmul-store4.wgsl). */
export function withVec4Y(common: string): string {
  if (!common.includes(SCALAR_Y)) throw new Error('matmul-params: matmul-common.wgsl no longer declares y as expected');
  return common.replace(SCALAR_Y, '@group(0) @binding(2) var<storage, read_write> y: array<vec4f>;');
}

/** A tiled template (matmul-regs*.wgsl) keeping its four-row store4() line (`y4`) or its one-row store() line. */
export function withStoreWidth(template: string, y4: boolean): string {
  const drop = y4 ? '{ store(' : '{ store4(';
  return template
    .split('\n')
    .filter((line) => !line.includes(drop))
    .join('\n');
}

/**
 * Whether a dispatch's y can be stored four rows at once: y offset (with the shard's first row), stride
 * and rows multiples of 4, so each quad of rows is one aligned vec4 wholly inside the shard.
 */
export function yVec4(p: MatmulParams): boolean {
  return ((p.yOffset ?? 0) + (p.rowOffset ?? 0)) % 4 === 0 && (p.t === 1 || (p.yStride ?? p.n) % 4 === 0) && p.n % 4 === 0;
}

type Buffer = GPUBuffer | GPUBufferBinding;

/** A product's optional buffers, each required exactly where its ProductOptions flag is set. */
export interface ProductExtras {
  bias?: Buffer;
  norm?: Buffer;
  /** ProductOptions.tail: its counters (zeroed words, tailCounterWords), the norm weight ('norm-q8'), its int8 output (or, 'rope-kv', positions, sequences, page table, factors and the K and V caches). */
  tail?: Buffer[];
}

/** The buffers of a product's bind group in binding order, checked against how it was built. */
export function productBuffers(label: string, opts: ProductOptions, w: WeightStore, x: Buffer, y: Buffer, more: ProductExtras): BindingResource[] {
  for (const [name, flag] of [['bias', opts.bias], ['norm', opts.norm]] as const) {
    const given = more[name] !== undefined;
    if (given !== (flag ?? false)) throw new Error(`${label}: ${flag ? `needs a ${name} buffer` : `built without a ${name} buffer`}`);
  }
  const tail = tailBindings(opts.tail).length;
  if ((more.tail?.length ?? 0) !== tail) throw new Error(`${label}: ${tail ? `needs ${tail} tail buffers` : 'built without a tail'}`);
  return [w, x, y, ...[more.bias, more.norm].filter((b): b is Buffer => b !== undefined), ...(more.tail ?? [])];
}

/**
 * The kernels read x as vec4s (matmul-common.wgsl). Offsets and strides that are multiples of 4 use the
 * pipeline built with matmul-x-aligned.wgsl; any other gets a second pipeline, compiled on first use.
 * Both share one bind group layout, so a bind group made once serves either.
 */
export class XAlignedPair {
  private built: CompiledKernel | undefined;
  private unaligned: CompiledKernel | undefined;

  /**
   * `spec(x4)` is the kernel's spec with the given x4() and x1() source joined into its code. A gated
   * product (`glu`) has only the aligned kernel, reading x through matmul-x-glu.wgsl. The aligned kernel
   * is built now, or with `lazy` on its first use (for kernels most steps do without; SwiftShader
   * compiles a pipeline when it is made, seconds for a tiled one).
   */
  constructor(
    private readonly ctx: KernelContext,
    private readonly spec: (x4: string) => KernelSpec,
    private readonly glu?: Activation,
    lazy = false,
  ) {
    if (!lazy) this.built = this.build();
  }

  get aligned(): CompiledKernel {
    return (this.built ??= this.build());
  }

  private build(): CompiledKernel {
    return this.ctx.kernel(this.spec(this.glu ? wgsl(xGlu, activationWgsl(this.glu)) : xAligned));
  }

  for(p: MatmulParams): CompiledKernel {
    const aligned = (p.xOffset ?? 0) % 4 === 0 && (p.t === 1 || (p.xStride ?? p.k) % 4 === 0);
    if (this.glu) {
      if (!aligned || (p.gluUp ?? 0) % 4 !== 0) throw new Error(`${this.aligned.label}: a gated product needs x offset, stride and gluUp that are multiples of 4`);
      return this.aligned;
    }
    if (aligned) return this.aligned;
    if (!this.unaligned) {
      const spec = this.spec(xUnaligned);
      this.unaligned = this.ctx.kernel({ ...spec, label: `${spec.label}-unaligned-x` });
    }
    return this.unaligned;
  }
}
