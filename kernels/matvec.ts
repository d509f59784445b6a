import { GgmlType, typeName } from '../ggml/types.ts';
import type { GpuCaps } from './runtime/caps.ts';
import common from './matmul-common.wgsl?raw';
import { productBuffers, productStore, withStoreWidth, withVec4Y, writeMatmulParams, XAlignedPair, yVec4, type MatmulParams, type ProductExtras, type ProductOptions } from './matmul-params.ts';
import coop from './matvec-coop.wgsl?raw';
import dp4a from './matvec-dp4a.wgsl?raw';
import dp4aXNorm from './matvec-dp4a-x-norm.wgsl?raw';
import dp4aXPlain from './matvec-dp4a-x-plain.wgsl?raw';
import rows from './matvec-rows.wgsl?raw';
import rowsBlocks from './matvec-rows-blocks.wgsl?raw';
import xBlockF32 from './matmul-x-block-f32.wgsl?raw';
import xBlockQ8 from './matmul-x-block-q8.wgsl?raw';
import xqBuffer from './matmul-xq-buffer.wgsl?raw';
import subgroup from './matvec-subgroup.wgsl?raw';
import xNorm from './matvec-x-norm.wgsl?raw';
import xPlain from './matvec-x-plain.wgsl?raw';
import { checkTailParams, tailCode, tailConstants } from './matvec-tail.ts';
import { INT8_TYPES, int8Wgsl } from './int8-weights.ts';
import { BLOCK_WALK_TYPES, deviceLayout, walkStep } from './quant/layouts.ts';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { unrollRowsTokens, walkSteps } from './unroll.ts';
import { grid2d } from './runtime/grid.ts';
import type { WeightStore } from './runtime/weights.ts';

/** Most rows of x a matrix-vector kernel takes; more go to the tiled kernel. */
export const MAX_MATVEC_T = 8;

/**
 * rows: four weight rows per invocation (BLOCK_ROWS for block-walking types), unrolled over the rows
 * of x (CPU rasterisers: no barriers, no loops they would not unroll). coop: 16 threads per row with a workgroup-memory reduction (GPUs).
 * subgroup: a subgroup per row with subgroupAdd (GPUs with subgroups).
 * dp4a: Q8_0, Q4_0, Q4_K and Q6_K on GPUs with subgroups and dot4I8Packed: x quantized to int8 blocks in workgroup memory,
 * integer dot products (matvec-dp4a.wgsl); a k whose staged x would not fit runs the subgroup kernel.
 */
export type MatVecVariant = 'rows' | 'coop' | 'subgroup' | 'dp4a';

/** The variant for `type`'s products built with `opts` on this device (without a type: the float variant). */
export function matvecVariant(caps: GpuCaps, type?: GgmlType, opts: ProductOptions = {}): MatVecVariant {
  if (caps.software) return 'rows';
  if (!caps.subgroups) return 'coop';
  const int8 = type !== undefined && INT8_TYPES.has(type) && caps.packedDot && (opts.int8Dot ?? true) && !opts.xq8 && !opts.tail;
  return int8 ? 'dp4a' : 'subgroup';
}

// The dp4a variant's workgroup where dp4aGroup has no rule: 128 invocations (4 subgroups of 32) over 8
// rows, so a workgroup quantizes its x once for 8 rows and a 2048-row product still has 256 workgroups.
const DP4A_GROUP = { wg: 128, rows: 8 };

/**
 * The dp4a variant's workgroup for a one-row product of n weight rows: the most rows a workgroup (so the
 * fewest workgroups quantizing x, each for itself) that still leave 512 workgroups (384 with the norm
 * folded in, whose workgroups also sum x's squares). Measured on an H200 (the lab: 16 layers of
 * Llama-3.2-1B Q8_0 decode products, GB/s of weights; 132 cores): plain, 4 rows (128 invocations, a
 * subgroup a row) QKV 605, O 459, down 992 against 477, 322, 757 at 8 rows; gate|up (16384 rows) 32 rows
 * (256 invocations) 1866, 16 rows 1706, 8 rows 1500; the head 32 rows 2302, 8 rows 2150. Norm folded in:
 * QKV 8 rows 455 (4: 434, 16: 385), gate|up 16 rows 1390 (8: 1212), the head 16 rows 1669 (8: 1491).
 * Gated products (their workgroups also compute act(gate) * up over all of k) and batches of several
 * rows of x were not measured and keep DP4A_GROUP.
 */
export function dp4aGroup(n: number, t: number, opts: Pick<ProductOptions, 'norm' | 'glu'>): { wg: number; rows: number } {
  if (t > 1 || opts.glu) return DP4A_GROUP;
  const [choices, minGroups] = opts.norm ? [[8, 16], 384] : [[4, 8, 16, 32], 512];
  let rows = choices[0];
  for (const r of choices) if (Math.ceil(n / r) >= minGroups) rows = r;
  return { wg: rows > 16 ? 256 : 128, rows };
}

const WG = 64;
const LANES = 16;

/**
 * The subgroup variant's workgroup: one subgroup of at least 32 invocations, a row to each subgroup at
 * the smallest size the device may pick (a larger subgroup loops over the rows). On an H200 (subgroups
 * of 32) a 1B-class decode step's products took the same time in the engine as with two subgroups a
 * workgroup (2.1 against 2.2 ms, the step's timestamps); the lab's first reading of 3x faster was the
 * order it measured in (bench/gpu/lab.ts says why).
 */
export function subgroupGroup(caps: Pick<GpuCaps, 'subgroupMinSize'>): { wg: number; rows: number } {
  const size = Math.max(4, caps.subgroupMinSize);
  const wg = Math.max(32, Math.min(64, size));
  return { wg, rows: Math.max(1, Math.floor(wg / size)) };
}
// The rows variant: invocations per workgroup, each computing 4 or BLOCK_ROWS weight rows. Small
// workgroups give a CPU rasteriser enough of them to spread over its threads.
const ROWS_WG = 32;
// Weight rows per invocation of the block-walking kernel, and the rows CPU layouts group together
// (quant/layouts.ts). 8 against 4, measured while decode products still prefetched their successor's
// weights (interleaved pairs on llvmpipe, SmolLM2-135M): Q8_0 decode +6-8% (7 of 7 pairs at 512 bits),
// Q4_0 19.1/17.2 -> 19.9/19.0 tok/s; step-shaped products Q4_K 28-33 -> 24-27 ms, Q6_K 59-66 -> 45-52 ms.
// Groups of 8 rows then took 0.92x the time of groups of 4.
const BLOCK_ROWS = 8;

/**
 * The rows variant's WGSL for `type` and `t` rows of x (without the weights' declaration, which
 * KernelContext adds): the block-walking kernel for Q8_0, Q4_0, Q4_K and Q6_K (8 weight rows an
 * invocation), matvec-rows.wgsl for the float types (4); `y4` stores four rows of y at once, `x4` is x's
 * reader (matmul-x-aligned.wgsl and the like). Shared with the persistent-products probe
 * (probes/measure-persistent.ts), which runs this kernel's body as its phases.
 */
export function rowsKernelSource(caps: GpuCaps, type: GgmlType, t: number, opts: ProductOptions, y4: boolean, x4: string): string {
  const blocks = BLOCK_WALK_TYPES.has(type);
  const store = productStore(opts);
  const layout = deviceLayout(caps, type).wgsl;
  const code = blocks ? wgsl(unrollRowsTokens(walkSteps(withStoreWidth(rowsBlocks, y4), walkStep(type), t), BLOCK_ROWS, t), opts.xq8 ? wgsl(xBlockQ8, xqBuffer) : xBlockF32) : unrollRowsTokens(rows, 1, t);
  const parts = y4 ? [withVec4Y(common), wgsl(layout, store.code4)] : [common, wgsl(layout, store.code)];
  return wgsl(code, parts[0], x4, parts[1], tailCode(opts.tail, store.tailBinding, y4));
}

const ROWS_ENTRY = '@compute @workgroup_size(WG)\nfn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u)';
const ROWS_PARAMS = '@group(1) @binding(0) var<uniform> params: Params;';

/**
 * rowsKernelSource (y stored four rows at once, no x4 reader: block-walking products of quantized x)
 * with its entry point a function, `product_body(wg, lid, nwg)`, and its params a private copy the
 * caller fills: for shaders that run the kernel's work in phases of one dispatch (ffn-chain.ts,
 * probes/measure-persistent.ts).
 */
export function rowsKernelBody(caps: GpuCaps, type: GgmlType, t: number, opts: ProductOptions): string {
  const source = rowsKernelSource(caps, type, t, opts, true, '');
  if (!source.includes(ROWS_ENTRY) || !source.includes(ROWS_PARAMS)) throw new Error('matvec: the rows kernel no longer has the entry point and params rowsKernelBody rewrites');
  return source.replace(ROWS_ENTRY, 'fn product_body(wg: vec3u, lid: u32, nwg: vec3u)').replace(ROWS_PARAMS, 'var<private> params: Params;');
}

/** Weight rows an invocation of the rows variant computes for `type`. */
export function rowsPerInvocationFor(type: GgmlType): number {
  return BLOCK_WALK_TYPES.has(type) ? BLOCK_ROWS : 4;
}

/**
 * y[t, n] (+)= sum_k x[t, k] W[n, k] for a fixed number `t` (1..8) of rows of x, W packed as `type`.
 * All t rows share one pass over W. Bindings: W (read, GPU layout of quant/), x (read), y (write), and
 * with `bias` the bias (read).
 */
export class MatVecKernel {
  private readonly kernels: XAlignedPair;
  /** The kernels of a dispatch storing four rows of y at once (`y4`: the block-walking rows kernel, where yVec4 allows) or one. */
  private pairFor: (y4: boolean) => XAlignedPair = () => this.kernels;
  /** Reads quantized x (ProductOptions.xq8), whose offsets and strides count vec4s. */
  private readonly xq8: boolean;
  /** Weight rows per workgroup, and per invocation of the rows variant. */
  private readonly rowsPerGroup: number;
  private readonly rowsPerInvocation: number = 1;
  private readonly opts: ProductOptions;
  readonly variant: MatVecVariant;
  /** The dp4a variant's kernels, one per k (their workgroup memory holds x's t rows) and workgroup shape (dp4aGroup, by a product's rows). */
  private readonly staged?: {
    groupFor: (n: number) => { wg: number; rows: number };
    /** Kernels by k and workgroup shape (products of several n may share one). */
    built: Map<string, XAlignedPair | undefined>;
    /** What a product of k and n runs, by k then n: looked up at every encode without allocating. */
    byShape: Map<number, Map<number, { pair: XAlignedPair; rows: number } | undefined>>;
    build: (k: number, group: { wg: number; rows: number }) => XAlignedPair | undefined;
  };

  constructor(
    ctx: KernelContext,
    readonly type: GgmlType,
    readonly t: number,
    variant: MatVecVariant | undefined = undefined,
    opts: ProductOptions = {},
  ) {
    this.variant = variant ?? matvecVariant(ctx.caps, type, opts);
    if (!Number.isInteger(t) || t < 1 || t > MAX_MATVEC_T) throw new Error(`matvec: t=${t} is outside 1..${MAX_MATVEC_T}`);
    const store = productStore(opts);
    const BINDINGS = store.bindings;
    const layout = deviceLayout(ctx.caps, type).wgsl;
    const decode = wgsl(layout, store.code);
    variant = this.variant;
    const label = `matvec-${variant}-${typeName(type)}-t${t}${store.suffix}`;
    this.xq8 = opts.xq8 ?? false;
    this.opts = opts;
    if (this.xq8 && (variant !== 'rows' || !BLOCK_WALK_TYPES.has(type) || opts.glu)) throw new Error(`${label}: quantized x is read by the block-walking rows kernel only (Q8_0, Q4_0, Q4_K, Q6_K), without a gated input`);
    if (opts.norm && (variant === 'rows' || opts.glu)) throw new Error(`${label}: a norm-fused product needs a GPU variant (coop, subgroup, dp4a) and no GLU`);
    if (opts.tail && (variant !== 'rows' || opts.glu)) throw new Error(`${label}: a tail runs in the rows variant (CPU rasterisers) of a product without a gated input`);
    // How the GPU variants read x: plainly, or as RMSNorm(x) with the norm weight in the last own binding.
    const xRead = opts.norm ? xNorm.replaceAll('NORM_BINDING', String(store.tailBinding - 1)) : xPlain;
    // The float subgroup kernel: the subgroup variant's, and the dp4a variant's for a k it cannot stage.
    const subgroupPair = (name: string, group: { wg: number; rows: number }, units: number) => {
      const constants = { WG: group.wg, ROWS: group.rows, TT: t, UNITS: units };
      return new XAlignedPair(ctx, (x4) => ({ label: name, code: wgsl(subgroup, common, x4, xRead, decode), bindings: BINDINGS, constants }), opts.glu);
    };
    if (variant === 'dp4a') {
      if (!ctx.caps.subgroups || !ctx.caps.packedDot || !INT8_TYPES.has(type)) throw new Error(`${label}: the dp4a variant needs Q8_0, Q4_0, Q4_K or Q6_K weights, subgroups and dot4I8Packed`);
      if (opts.xq8 || opts.tail || opts.gpuGroup?.units !== undefined) throw new Error(`${label}: the dp4a variant quantizes x itself and takes no tail or units`);
      const groupFor = (n: number) => opts.gpuGroup ?? dp4aGroup(n, t, opts);
      const xIn = opts.norm ? dp4aXNorm.replaceAll('NORM_BINDING', String(store.tailBinding - 1)) : dp4aXPlain;
      // Workgroup memory: 44 bytes a block of x (quants, step, its halves' sums of quants) for each of the
      // t rows, and the norm's partial sums (one a subgroup of at least 4 invocations and token).
      const fits = (k: number, wg: number) => k % 32 === 0 && (t * k * 44) / 32 + (opts.norm ? 4 * MAX_MATVEC_T * (wg / 4) : 0) <= ctx.caps.maxWorkgroupStorage;
      const build = (k: number, group: { wg: number; rows: number }) => (fits(k, group.wg) ? new XAlignedPair(ctx, (x4) => ({ label, code: wgsl(dp4a, common, x4, xIn, int8Wgsl(type), decode), bindings: BINDINGS, constants: { WG: group.wg, ROWS: group.rows, TT: t, XB: (t * k) / 32 } }), opts.glu) : undefined);
      this.staged = { groupFor, built: new Map(), byShape: new Map(), build };
      // A k too wide for workgroup memory runs the float subgroup kernel.
      const fallback = subgroupGroup(ctx.caps);
      this.rowsPerGroup = fallback.rows;
      this.kernels = subgroupPair(label.replace('dp4a', 'subgroup'), fallback, 1);
    } else if (variant === 'subgroup') {
      if (!ctx.caps.subgroups) throw new Error('matvec: the subgroup variant needs the subgroups feature');
      // One row per subgroup at the smallest size the device may pick; larger subgroups loop over rows.
      const units = opts.gpuGroup?.units ?? 1;
      if (!Number.isInteger(units) || units < 1 || units > 4) throw new Error(`${label}: ${units} units a lane at once is outside 1..4`);
      const group = opts.gpuGroup ?? subgroupGroup(ctx.caps);
      this.rowsPerGroup = group.rows;
      this.kernels = subgroupPair(label, group, units);
    } else if (variant === 'coop') {
      if (opts.gpuGroup?.units !== undefined) throw new Error(`${label}: units a lane at once are the subgroup variant's option`);
      const wg = opts.gpuGroup?.wg ?? WG;
      const lanes = opts.gpuGroup ? wg / opts.gpuGroup.rows : LANES;
      if (!Number.isInteger(lanes) || lanes < 1 || (lanes & (lanes - 1)) !== 0) throw new Error(`${label}: ${wg} invocations over ${opts.gpuGroup?.rows} rows is not a power-of-two number of lanes a row`);
      this.rowsPerGroup = wg / lanes;
      this.kernels = new XAlignedPair(ctx, (x4) => ({ label, code: wgsl(coop, common, x4, xRead, decode), bindings: BINDINGS, constants: { WG: wg, LANES: lanes, TT: t } }), opts.glu);
    } else {
      const blocks = BLOCK_WALK_TYPES.has(type);
      this.rowsPerInvocation = rowsPerInvocationFor(type);
      this.rowsPerGroup = ROWS_WG * this.rowsPerInvocation;
      const constants = { WG: ROWS_WG, ...tailConstants(opts.tail, this.rowsPerInvocation) };
      // The block-walking kernel in two forms, as the tiled products (matmul.ts): storing four rows of y
      // at once where the dispatch's y allows (a decode step 0.86x the time on llvmpipe, SmolLM2-135M
      // Q8_0, 11 of 11 interleaved rounds), else one at a time (label suffix -y1).
      const pair = (y4: boolean) => {
        const code = (x4: string) => rowsKernelSource(ctx.caps, type, t, { ...opts, xq8: this.xq8 }, y4, x4);
        return new XAlignedPair(ctx, (x4) => ({ label: `${label}${y4 || !blocks ? '' : '-y1'}`, code: code(x4), bindings: BINDINGS, constants }), opts.glu);
      };
      this.kernels = pair(blocks);
      if (blocks) {
        let scalarY: XAlignedPair | undefined;
        this.pairFor = (y4) => (y4 ? this.kernels : (scalarY ??= pair(false)));
      }
    }
  }

  get kernel(): CompiledKernel {
    return this.kernels.aligned;
  }

  /** The dp4a kernel for n rows of k values and its rows a workgroup, built on first use (undefined where x's rows would not fit). */
  private stagedFor(k: number, n: number): { pair: XAlignedPair; rows: number } | undefined {
    if (!this.staged) return undefined;
    let byN = this.staged.byShape.get(k);
    if (!byN) this.staged.byShape.set(k, (byN = new Map()));
    if (!byN.has(n)) {
      const group = this.staged.groupFor(n);
      const key = `${k}/${group.wg}/${group.rows}`;
      if (!this.staged.built.has(key)) this.staged.built.set(key, this.staged.build(k, group));
      const pair = this.staged.built.get(key);
      byN.set(n, pair && { pair, rows: group.rows });
    }
    return byN.get(n);
  }

  /** Builds now, at load, what products of n rows of k will run (the dp4a variant's kernel for them). */
  prepare(k: number, n: number): void {
    this.stagedFor(k, n);
  }

  /** Whether products of k-wide rows run the dp4a kernel (a k too wide for its workgroup memory does not). */
  int8For(k: number, n = 1): boolean {
    return this.stagedFor(k, n) !== undefined;
  }

  /** The bind group serves this kernel's every variant; x's binding size must be a multiple of 16 bytes (ctx.storage sizes are). */
  bind(w: WeightStore, x: GPUBuffer | GPUBufferBinding, y: GPUBuffer | GPUBufferBinding, more: ProductExtras = {}): GPUBindGroup {
    return this.kernel.bind(productBuffers(this.kernel.label, this.opts, w, x, y, more));
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: MatmulParams): void {
    if (p.t !== this.t) throw new Error(`${this.kernel.label}: built for t=${this.t}, asked for t=${p.t}`);
    if (p.tail) {
      if (!this.opts.tail) throw new Error(`${this.kernel.label}: built without a tail`);
      checkTailParams(this.kernel.label, this.opts.tail, p.tail, p.n, p.rowOffset ?? 0, this.rowsPerInvocation);
    }
    const s = writeMatmulParams(arena, p);
    const staged = this.stagedFor(p.k, p.n);
    const [gx, gy] = grid2d(Math.ceil(p.n / (staged?.rows ?? this.rowsPerGroup)));
    const pair = staged?.pair ?? this.pairFor(yVec4(p));
    arena.dispatch(pass, this.xq8 ? pair.aligned : pair.for(p), group, s, gx, gy);
  }
}
