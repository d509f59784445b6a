import { GgmlType, typeName } from '../ggml/types.ts';
import type { GpuCaps } from './runtime/caps.ts';
import common from './matmul-common.wgsl?raw';
import { productBuffers, productStore, withStoreWidth, withVec4Y, writeMatmulParams, XAlignedPair, yVec4, type MatmulParams, type ProductExtras, type ProductOptions } from './matmul-params.ts';
import regs from './matmul-regs.wgsl?raw';
import regsBlocks from './matmul-regs-blocks.wgsl?raw';
import xBlockF32 from './matmul-x-block-f32.wgsl?raw';
import xBlockQ8 from './matmul-x-block-q8.wgsl?raw';
import xqBuffer from './matmul-xq-buffer.wgsl?raw';
import { withTextureX, XTextures } from './matmul-x-texture.ts';
import xAligned from './matmul-x-aligned.wgsl?raw';
import { unrollRowsTokens, walkSteps } from './unroll.ts';
import tiles from './matmul-tiles.wgsl?raw';
import tilesVec4 from './matmul-tiles-vec4.wgsl?raw';
import tilesDp4a from './matmul-tiles-dp4a.wgsl?raw';
import { INT8_TYPES, int8Wgsl, tileHalves } from './int8-weights.ts';
import tileEdges from './matmul-tiles-edges.wgsl?raw';
import { BLOCK_WALK_TYPES, deviceLayout, walkStep } from './quant/layouts.ts';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type BindingKind, type CompiledKernel, type KernelContext, type KernelSpec } from './runtime/context.ts';
import { withUniformX, xWindowBytes, XWindows, type XWidth } from './matmul-x-window.ts';
import { q8RowVec4s } from './quantize-x.ts';
import type { WeightStore } from './runtime/weights.ts';

/**
 * regs: register blocks per invocation, no workgroup memory (CPU rasterisers, where barriers are
 * expensive). tiles-vec4: 32-token x 128-row workgroup tiles staged in workgroup memory and read as
 * vec4s along k (GPUs); tiles: 32 x 64 tiles read one float at a time (what tiles-vec4 runs for small
 * grids, VEC4_MIN_WORKGROUPS); tiles-dp4a: Q8_0, Q4_0, Q4_K and Q6_K in the same tile shape, x
 * quantized to int8 as it is staged and summed with dot4I8Packed (GPUs offering it), and for small grids
 * in a 32 x 64 tile of its own.
 */
export type MatMulVariant = 'regs' | 'tiles' | 'tiles-vec4' | 'tiles-dp4a';

/**
 * Workgroup memory of the int8 tile (matmul-tiles-dp4a.wgsl) staging `blocks` blocks of k a step for
 * `tokens` tokens (the 128 weight rows' and the tokens' quants, 2 blocks + 1 vec4 a row; a step and a sum
 * a block of each, two with `halves`): 15 KB at 2 blocks and 32 tokens, or 17.25 KB for Q6_K, past the
 * 16 KB every WebGPU device offers.
 */
export function dp4aTileBytes(halves: boolean, blocks = 2, tokens = 32): number {
  const scales = halves ? 2 : 1;
  return (128 + tokens) * (2 * blocks + 1) * 16 + tokens * blocks * 4 + scales * (2 * 128 * blocks * 4 + tokens * blocks * 4);
}

/** The variant for `type`'s products built with `opts` on this device (without a type: the float variant). */
export function matmulVariant(caps: GpuCaps, type?: GgmlType, opts: ProductOptions = {}): MatMulVariant {
  if (caps.software) return 'regs';
  const int8 = type !== undefined && INT8_TYPES.has(type) && caps.packedDot && (opts.int8Dot ?? true) && dp4aTileBytes(tileHalves(type), opts.int8TileBlocks, opts.int8TileTokens) <= caps.maxWorkgroupStorage;
  return int8 ? 'tiles-dp4a' : 'tiles-vec4';
}

const TILES = {
  tiles: { tileN: 64, tileT: 32, code: tiles },
  'tiles-vec4': { tileN: 128, tileT: 32, code: tilesVec4 },
  'tiles-dp4a': { tileN: 128, tileT: 32, code: tilesDp4a },
};
/**
 * The fewest workgroups a tiles-vec4 (or tiles-dp4a) dispatch takes; smaller grids run the 32 x 64 tile, twice as many
 * workgroups. On an H200 (132 cores) the vec4 tile ran a 1B prefill's products (512 tokens, grids of 256
 * to 2048 workgroups) 1.28x faster, but decode batches of 16 sequences (tiled products of 16 rows of
 * x, grids of 5 to 128 vec4 tiles) lost two fifths of their speed (SmolLM2-135M 1942 -> 1144 tok/s).
 */
const VEC4_MIN_WORKGROUPS = 256;
// Rows x tokens per invocation of the CPU rasterisers' tiled products, every weight type. Measured on
// llvmpipe for Q8_0 (SmolLM2-135M shapes, 64-token prefill: ms for the step's 120 products; first compile
// with an empty Mesa shader cache): 4x4 995 ms; 8x8 704 ms, 1.1 s; 16x8 515 ms, 2.6 s; 16x16 436 ms,
// 8.7 s; 32x16 390 ms, 35 s. A spilled accumulator costs a vector load and store, every weight or x load
// a loop over the SIMD lanes; LLVM's compile time grows faster than the speed, and warm-up pays it. The
// other types against the former 4x4: Q4_0 prefill 70 -> 91 tok/s, F16 66 -> 83; first compile 2-4 s
// (Q6_K the longest). SwiftShader compiles it at pipeline creation (3-5 s each; model load 4 -> 14 s)
// and prefills Q8_0 at 14.6 tok/s against 6.3.
// Invocations per workgroup (WG_N) fill at least one SIMD instruction: llvmpipe at 512 bits runs 16
// (64-token prefill 165 -> 215-228 tok/s against 8 a workgroup, half of each instruction idle).
const REGS = { WG_N: 8, WG_T: 1, rows: 16, tokens: 8 };
/** Weight rows per invocation the CPU rasterisers' tiled kernel may be built with (tiledRowsFor). */
export const TILED_ROWS = [16, 12] as const;

/**
 * Below this many lanes (llvmpipe at 256 bits: AVX2, whose 16 vector registers are half of AVX-512's 32)
 * the tiled kernel takes 12 weight rows whatever the widths: a 16-row block's 256 accumulators of a
 * 16-token invocation spill more than 12 rows' 192, which costs more there than the padding 12 rows may
 * add. 2-core AMD EPYC (Zen 3, llvmpipe 256 bits), live TTFT in one process, two engines alternating:
 * SmolLM2-135M Q8_0 64-token prompt 0.93x (6 of 6 rounds), Llama-3.2-1B Q4_K_M shapes 32-token prompt
 * 0.97x (4 of 4; 2048-wide products padded to 2112), the same tokens; 16-sequence decode unchanged.
 */
const NARROW_SIMD_BELOW_LANES = 16;

/**
 * The register block (weight rows per invocation) for a model whose products have these output widths.
 * A workgroup covers lanes x rows weight rows, and the last one of a product computes its padding in
 * full (a CPU rasteriser runs masked lanes anyway): SmolLM2-135M's 576-wide O and down products pad to
 * 768 with 16 rows (256 a workgroup at 16 lanes) and not at all with 12 (192). Fewer rows share each x
 * load, so a padded row costs about 18 + 48 / rows units (x loads 3 per token and block, 16 tokens,
 * against 2 weight loads and 16 multiply-add blocks a row): the block with the smaller total wins. On
 * llvmpipe at 512 bits, SmolLM2-135M's 64-token prefill with 12 rows against 16: 228 against 214 tok/s
 * (medians of 10 interleaved rounds in one process, 9 of them faster).
 */
export function tiledRowsFor(caps: GpuCaps, widths: readonly number[]): number {
  if (caps.cpuLanes > 0 && caps.cpuLanes < NARROW_SIMD_BELOW_LANES) return 12;
  const lanes = Math.max(REGS.WG_N, caps.cpuLanes);
  const cost = (rows: number) => widths.reduce((sum, n) => sum + Math.ceil(n / (lanes * rows)) * lanes * rows * (18 + 48 / rows), 0);
  return TILED_ROWS.reduce((best, rows) => (cost(rows) < cost(best) ? rows : best));
}
// The block-walking product reading quantized x (three loads per token and block) takes 16 tokens per
// invocation in steps of at least that many where x comes from a uniform window or storage (SwiftShader,
// and llvmpipe where a step cannot copy x into a texture): SwiftShader's replayed step products 0.83x the
// time at 16 tokens, 0.86x at 64 (SmolLM2-135M Q8_0). Read through a texture (llvmpipe) every step keeps
// 8 tokens, whose 96 accumulators spill less than 192 and whose twice as many workgroups fill both
// threads of narrow products: replayed step products at 16 / 64 / 256 tokens, 8 against 16 tokens an
// invocation, 0.82-0.85 / 0.93-1.00 / 0.95x for Q8_0 and 0.82 / 0.81 for the 1B's Q4_K_M (session 22).
// Shorter steps (batched decode of 4 to 15 rows) keep 8 everywhere; the wide pipeline is built on its first use.
// Since session 26 a texture step's product whose 16-token grid still fills llvmpipe's threads takes 16
// tokens too (WIDE_TEXTURE_MIN_WORKGROUPS): the comparison above was of whole steps, narrow products included.
export const XQ8_WIDE_TOKENS = 16;
/**
 * Through a texture, a product of 16 tokens or more takes the 16-token kernel where its grid still has this
 * many workgroups (the 8-token grid's half), so both of llvmpipe's threads stay busy; narrower products
 * keep 8 tokens (session 22, above). Each weight block is then decoded once for 16 tokens instead of
 * twice. Live A/B in one process, alternating, 2-core Xeon (session 26): SmolLM2-135M Q8_0, a 16-sequence
 * decode step's replay 0.95x the time (4 of 5 rounds; gate|up 31.0 -> 28.2 ms, the head 15.7 -> 13.8) and a
 * 64-token prefill step's 0.97x (5 of 5; with the QKV, O and down products wide there too, 4 of 4 better
 * again than gate|up alone); Llama-3.2-1B Q4_K_M shapes, a 32-token prompt's TTFT 0.89x and a 16-sequence
 * decode step 0.91x (2 of 2).
 */
export const WIDE_TEXTURE_MIN_WORKGROUPS = 8;

/**
 * y[t, n] (+)= sum_k x[t, k] W[n, k] for any number of rows of x (prefill), W packed as `type`.
 * Bindings: W (read, GPU layout of quant/), x (read), y (write), and with `bias` the bias (read).
 */
export class MatMulKernel {
  private readonly kernels: XAlignedPair;
  /**
   * The kernels of a dispatch that stores four rows of y at once (`y4`, where yVec4 allows: the CPU
   * rasterisers' tiled kernels) or one at a time (every GPU kernel, and a tiled product's odd shapes).
   */
  private readonly pairFor: (y4: boolean) => XAlignedPair;
  private readonly tileN: number;
  private readonly tileT: number;
  readonly variant: MatMulVariant;
  /** tiles-vec4 and tiles-dp4a: the 32 x 64 tile's kernels (tiles-dp4a's own at 64 rows) for dispatches of small grids (VEC4_MIN_WORKGROUPS). */
  private readonly scalarTiles: XAlignedPair | undefined;
  /** Reads quantized x (ProductOptions.xq8), whose offsets and strides count vec4s. */
  private readonly xq8: boolean;
  /** With quantized x: the XQ8_WIDE_TOKENS-token kernels, made on first use. */
  private wide: ((y4: boolean) => CompiledKernel) | undefined;
  /** With quantized x: both widths' kernels reading x through a uniform window, where the device allows one. */
  private xWindows: XWindows | undefined;
  /** With quantized x on llvmpipe: both widths' kernels reading x through a texture it is copied into. */
  private xTextures: XTextures | undefined;

  /** The storage-x kernel's label, which its bind groups carry (bind() and attach() need no compiled kernel). */
  readonly label: string;
  private readonly bindings: readonly BindingKind[];

  constructor(
    private readonly ctx: KernelContext,
    readonly type: GgmlType,
    variant: MatMulVariant | undefined = undefined,
    private readonly opts: ProductOptions = {},
  ) {
    this.variant = variant = variant ?? matmulVariant(ctx.caps, type, opts);
    const store = productStore(opts);
    const layout = deviceLayout(ctx.caps, type).wgsl;
    const decode = wgsl(layout, store.code);
    const rows = opts.tiledRows ?? REGS.rows;
    const label = `matmul-${variant}-${typeName(type)}${store.suffix}${variant === 'regs' && rows !== REGS.rows ? `-r${rows}` : ''}${variant === 'tiles-dp4a' && opts.int8TileBlocks === 4 ? '-kb4' : ''}${variant === 'tiles-dp4a' && opts.int8TileTokens === 64 ? '-t64' : ''}`;
    if (opts.norm || opts.tail) throw new Error(`${label}: norm-fused products and tails are matrix-vector only (decode-sized batches)`);
    const blocks = BLOCK_WALK_TYPES.has(type) && variant === 'regs';
    if (opts.xq8 && (!blocks || opts.glu)) throw new Error(`${label}: quantized x is read by the block-walking regs kernel only (Q8_0, Q4_0, Q4_K, Q6_K), without a gated input`);
    this.xq8 = opts.xq8 ?? false;
    const bindings = store.bindings;
    this.label = label;
    this.bindings = bindings;
    if (variant !== 'regs') {
      if (ctx.caps.maxInvocationsPerWorkgroup < 128) throw new Error(`matmul: the ${variant} variant needs 128 invocations per workgroup`);
      if (variant === 'tiles-dp4a' && (!INT8_TYPES.has(type) || !ctx.caps.packedDot || opts.xq8)) throw new Error(`${label}: the tiles-dp4a variant needs Q8_0, Q4_0, Q4_K or Q6_K weights and dot4I8Packed, and quantizes x itself`);
      const tileBytes = dp4aTileBytes(tileHalves(type), opts.int8TileBlocks, opts.int8TileTokens);
      if (variant === 'tiles-dp4a' && tileBytes > ctx.caps.maxWorkgroupStorage) throw new Error(`${label}: the tiles-dp4a variant needs ${tileBytes} bytes of workgroup memory for ${typeName(type)}; this device offers ${ctx.caps.maxWorkgroupStorage}`);
      const int8 = (v: keyof typeof TILES) => v === 'tiles-dp4a';
      const pairOf = (v: keyof typeof TILES, name: string, constants: Record<string, number> = {}) =>
        new XAlignedPair(ctx, (x4) => ({ label: name, code: wgsl(TILES[v].code, tileEdges, common, x4, decode, int8(v) ? int8Wgsl(type) : ''), bindings, constants: int8(v) ? { HALVES: Number(tileHalves(type)), KB: opts.int8TileBlocks ?? 2, BT: opts.int8TileTokens ?? 32, ...constants } : constants }), opts.glu);
      this.kernels = pairOf(variant, label);
      this.pairFor = () => this.kernels;
      ({ tileN: this.tileN, tileT: this.tileT } = TILES[variant]);
      if (variant === 'tiles-dp4a') this.tileT = opts.int8TileTokens ?? this.tileT;
      // Built now, with the rest, so no request compiles it on first use. The int8 tile's small grids
      // keep int8 in a 64-row tile of its own (the float tile's shape).
      if (variant === 'tiles-dp4a') this.scalarTiles = pairOf(variant, `${label}-n${TILES.tiles.tileN}`, { BN: TILES.tiles.tileN });
      else if (variant !== 'tiles') this.scalarTiles = pairOf('tiles', label.replace(variant, 'tiles'));
    } else {
      const { WG_T, tokens } = REGS;
      if (!(TILED_ROWS as readonly number[]).includes(rows)) throw new Error(`${label}: the tiled kernel takes ${TILED_ROWS.join(' or ')} weight rows an invocation, not ${rows}`);
      const constants = { WG_N: Math.max(REGS.WG_N, ctx.caps.cpuLanes), WG_T };
      // Every tiled kernel in two forms: storing four rows of y at once (store4, y as vec4s), and one at
      // a time for a dispatch whose y offset, stride or rows are not multiples of 4 (label suffix -y1).
      const source = (t: number, y4: boolean, xTexture = false) => {
        const unrolled = unrollRowsTokens(blocks ? walkSteps(withStoreWidth(regsBlocks, y4), walkStep(type), t) : withStoreWidth(regs, y4), rows, t);
        return blocks ? wgsl(unrolled, this.xq8 ? (xTexture ? xBlockQ8 : wgsl(xBlockQ8, xqBuffer)) : xBlockF32) : unrolled;
      };
      const forY = (y4: boolean) => ({ common: y4 ? withVec4Y(common) : common, decode: y4 ? wgsl(layout, store.code4) : decode, suffix: y4 ? '' : '-y1' });
      // With quantized x, a step reads it through a texture (llvmpipe) or a uniform window where it can,
      // so the kernel reading x from its storage buffer is built on first use: a SmolLM2-135M model on
      // SwiftShader never runs it, and its build took 5-6 s of the load (warmUp's full-length step builds
      // it where a model's x is too wide for a window).
      const pair = (y4: boolean) => {
        const f = forY(y4);
        return new XAlignedPair(ctx, (x4) => ({ label: `${label}${f.suffix}`, code: wgsl(source(tokens, y4), f.common, x4, f.decode), bindings, constants }), opts.glu, this.xq8);
      };
      this.kernels = pair(true);
      let scalarY: XAlignedPair | undefined;
      this.pairFor = (y4) => (y4 ? this.kernels : (scalarY ??= pair(false)));
      this.tileN = constants.WG_N * rows;
      this.tileT = WG_T * tokens;
      if (this.xq8) {
        const built = new Map<string, CompiledKernel>();
        const once = (key: string, spec: () => KernelSpec) => built.get(key) ?? built.set(key, ctx.kernel(spec())).get(key)!;
        const wideLabel = `${label}-t${XQ8_WIDE_TOKENS}`;
        this.wide = (y4) => {
          const f = forY(y4);
          return once(`wide${f.suffix}`, () => ({ label: `${wideLabel}${f.suffix}`, code: wgsl(source(XQ8_WIDE_TOKENS, y4), f.common, xAligned, f.decode), bindings, constants }));
        };
        // Both widths also read x through a uniform window where it fits one (matmul-x-window.ts).
        const window = xWindowBytes(ctx.caps);
        const windowed = (width: XWidth, y4: boolean) => {
          const f = forY(y4);
          const name = `${width === 'wide' ? wideLabel : label}${f.suffix}-xwin`;
          const t = width === 'wide' ? XQ8_WIDE_TOKENS : tokens;
          const uniformBindings = bindings.map((b, i) => (i === 1 ? ('uniform' as const) : b));
          return once(name, () => ({ label: name, code: wgsl(source(t, y4), withUniformX(f.common, window / 16), xAligned, f.decode), bindings: uniformBindings, constants }));
        };
        if (window > 0) this.xWindows = new XWindows(ctx, windowed);
        // On llvmpipe the 8-token kernel reads x through a texture where the step can copy it into one (matmul-x-texture.ts).
        const textured = (y4: boolean, wide: boolean) => {
          const f = forY(y4);
          const name = `${wide ? wideLabel : label}${f.suffix}-xtex`;
          const textureBindings = bindings.map((b, i) => (i === 1 ? ('texture' as const) : b));
          return once(name, () => ({ label: name, code: wgsl(source(wide ? XQ8_WIDE_TOKENS : tokens, y4, true), withTextureX(f.common), f.decode), bindings: textureBindings, constants }));
        };
        if (ctx.caps.weightTextures) this.xTextures = new XTextures(ctx, textured);
      }
    }
  }

  get kernel(): CompiledKernel {
    return this.kernels.aligned;
  }

  /** The bind group serves this kernel's every variant; x's binding size must be a multiple of 16 bytes (ctx.storage sizes are). */
  bind(w: WeightStore, x: GPUBuffer | GPUBufferBinding, y: GPUBuffer | GPUBufferBinding, more: ProductExtras = {}): GPUBindGroup {
    const group = this.ctx.bindGroup(this.bindings, productBuffers(this.label, this.opts, w, x, y, more), this.label);
    this.attach(group, w, x, y, more);
    return group;
  }

  /**
   * Records the buffers behind `group` (a bind group of the same layout, made by another kernel of the
   * product: WeightMatmul binds once for all), so its steps can read quantized x through a uniform
   * window of it (matmul-x-window.ts).
   */
  attach(group: GPUBindGroup, w: WeightStore, x: GPUBuffer | GPUBufferBinding, y: GPUBuffer | GPUBufferBinding, more: ProductExtras = {}): void {
    const buffers = productBuffers(this.label, this.opts, w, x, y, more);
    this.xWindows?.attach(group, buffers);
    this.xTextures?.attach(group, buffers);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: MatmulParams): void {
    const xStride = p.xStride ?? q8RowVec4s(p.k);
    // x copied into a texture (llvmpipe, in a step that allows copies): the whole step in one dispatch,
    // of the 16-token kernel where its grid is wide enough (WIDE_TEXTURE_MIN_WORKGROUPS), else the 8-token one.
    const wideTexture = p.t >= XQ8_WIDE_TOKENS && Math.ceil(p.n / this.tileN) * Math.ceil(p.t / XQ8_WIDE_TOKENS) >= WIDE_TEXTURE_MIN_WORKGROUPS;
    const viaTexture = this.xTextures?.prepare(arena, group, yVec4(p), p.t, p.xOffset ?? 0, xStride, wideTexture);
    if (viaTexture) {
      this.encodeRows(pass, arena, group, { ...p, xStride }, 0, { ...viaTexture, tileT: REGS.WG_T * (wideTexture ? XQ8_WIDE_TOKENS : REGS.tokens) });
      return;
    }
    // A step whose x does not fit one window runs one dispatch per window-full of whole 16-token tiles,
    // each reading its rows through a window at their start.
    const perWindow = this.xWindows?.windowable(group) && this.wide && (p.xOffset ?? 0) === 0 ? this.xWindows.rowsPerWindow(xStride, XQ8_WIDE_TOKENS) : 0;
    if (perWindow > 0 && p.t > perWindow) {
      const yStride = p.yStride ?? p.n;
      for (let t0 = 0; t0 < p.t; t0 += perWindow) {
        this.encodeRows(pass, arena, group, { ...p, t: Math.min(perWindow, p.t - t0), xStride, yStride, yOffset: (p.yOffset ?? 0) + t0 * yStride }, t0 * xStride);
      }
      return;
    }
    this.encodeRows(pass, arena, group, p, 0);
  }

  /** One dispatch over `p`'s rows: through `via` (an x texture's kernel and group), x's window at `windowStart`, or the bound x. */
  private encodeRows(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: MatmulParams, windowStart: number, via?: { kernel: CompiledKernel; group: GPUBindGroup; tileT: number }): void {
    const s = writeMatmulParams(arena, p);
    const wide = via === undefined && this.wide !== undefined && p.t >= XQ8_WIDE_TOKENS;
    const tileT = via?.tileT ?? (wide ? REGS.WG_T * XQ8_WIDE_TOKENS : this.tileT);
    const y4 = this.variant === 'regs' && yVec4(p);
    const bound = via ?? this.xWindows?.window(group, wide ? 'wide' : 'narrow', y4, p.t, p.xOffset ?? 0, p.xStride ?? q8RowVec4s(p.k), windowStart);
    // A small grid of vec4 tiles runs the scalar tile instead, with twice the workgroups (same bindings).
    const scalar = this.scalarTiles !== undefined && Math.ceil(p.n / this.tileN) * Math.ceil(p.t / tileT) < (this.opts.vec4MinWorkgroups ?? VEC4_MIN_WORKGROUPS);
    const tileN = scalar ? TILES.tiles.tileN : this.tileN;
    const pair = scalar ? this.scalarTiles! : this.pairFor(y4);
    const kernel = bound?.kernel ?? (wide ? this.wide!(y4) : this.xq8 ? pair.aligned : pair.for(p));
    // The int8 tile's small-grid form keeps its own tokens a tile; the float 32 x 64 tile has 32.
    const scalarT = this.variant === 'tiles-dp4a' ? tileT : TILES.tiles.tileT;
    arena.dispatch(pass, kernel, bound?.group ?? group, s, Math.ceil(p.n / tileN), Math.ceil(p.t / (scalar ? scalarT : tileT)));
  }
}
