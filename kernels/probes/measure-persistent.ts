/**
 * What a decode step's dispatches cost beyond their work on a CPU rasteriser, and what running a step's
 * products in one dispatch would save: the same products (a model's, each matrix its own weights) timed
 * one dispatch each, as the engine issues them, and in one dispatch of persistent workgroups, one per
 * llvmpipe compute thread, with a grid barrier between products (persistent-products.wgsl). Both run the
 * engine's own decode kernel (rowsKernelSource), so the outputs must be the same bits; a barrier that
 * gave up waiting is counted, and its run reported as untrusted.
 *
 * Only llvmpipe runs this: its atomics order the stores before them (GpuCaps.orderedAtomics), and its
 * workgroups each run to their end on a pool of threads whose size the engine knows once it has pinned
 * them, so one workgroup a thread all run at once. It is a measurement, not an engine path (yet): a
 * step's other passes (attention, norms, the activation) sit between its products.
 */
import { GgmlType } from '../../ggml/types.ts';
import xAligned from '../matmul-x-aligned.wgsl?raw';
import { MatVecKernel, rowsKernelBody, rowsPerInvocationFor } from '../matvec.ts';
import { deviceLayout } from '../quant/layouts.ts';
import { q8RowVec4s } from '../quantize-x.ts';
import { MATMUL_PARAM_WORDS } from '../matmul-params.ts';
import { ParamArena } from '../runtime/arena.ts';
import { wgsl, type KernelContext } from '../runtime/context.ts';
import { uploadWeights, type WeightStore } from '../runtime/weights.ts';
import { readWords } from './readback.ts';
import persistent from './persistent-products.wgsl?raw';
import { arenaPass, bestOf, firstRun } from './timing.ts';

export interface PersistentProducts {
  type: string;
  products: number;
  weightBytes: number;
  workgroups: number;
  /** Best of the runs, one dispatch a product. */
  dispatchMs: number;
  /** Best of the runs, one dispatch for all of them. */
  persistentMs: number;
  /** The last product's outputs the same bits both ways. */
  sameBits: boolean;
  /** Barriers that gave up waiting, all runs together (0 for a trustworthy persistentMs). */
  failedBarriers: number;
  /** The fewest arrivals at its product's barrier a workgroup saw past it, all runs: `workgroups` where every barrier held. */
  fewestArrivals: number;
}

const WG = 16;

/** The rows kernel's WGSL as the body of persistent-products.wgsl's phases. */
export function persistentSource(ctx: KernelContext, type: GgmlType): string {
  const body = rowsKernelBody(ctx.caps, type, 1, { xq8: true });
  if (!/let w0 = w_row\(/.test(body)) throw new Error('persistent probe: the rows kernel no longer has the row handles it rewrites');
  // Each product's matrix at its own vec4 offset (bias_offset, unused by these products) of one store.
  const placed = body.replace(/let w(\d+) = w_row\(([^;]*)\);/g, (_, r: string, args: string) => `let w${r} = w_row(${args}) + vec2u(8u * params.bias_offset, params.bias_offset);`);
  return wgsl(placed, xAligned, `const ROWS: u32 = ${rowsPerInvocationFor(type)}u;`, persistent);
}

/**
 * Time `shape`'s products (n x k, `copies` of each, in order) both ways on `workgroups` persistent
 * workgroups. Q8_0 only: a row-split handle moves by a matrix's vec4 offset in a shared store.
 */
export async function measurePersistentProducts(ctx: KernelContext, workgroups: number, shape: { n: number; k: number; copies: number }[], runs = 5): Promise<PersistentProducts> {
  const type = GgmlType.Q8_0;
  if (!ctx.caps.orderedAtomics) throw new Error('persistent probe: needs atomics that order the stores before them (llvmpipe)');
  const layout = deviceLayout(ctx.caps, type);
  const mats: { n: number; k: number; texel: number; bytes: number }[] = [];
  let texels = 0;
  for (const p of shape) {
    for (let c = 0; c < p.copies; c++) {
      const bytes = Math.ceil(layout.bufferBytes(p.n, p.k) / 16) * 16;
      mats.push({ n: p.n, k: p.k, texel: texels, bytes });
      texels += bytes / 16;
    }
  }
  // Quants of every value, every f16 scale a small normal number: 0x11 bytes, as the matrix-vector probe's.
  const all = new Uint8Array(texels * 16).fill(0x11);
  const maxK = Math.max(...mats.map((m) => m.k));
  const maxN = Math.max(...mats.map((m) => m.n));
  const stores: WeightStore[] = [uploadWeights(ctx.device, ctx.caps, 'persist.w', all)];
  const each = mats.map((m) => uploadWeights(ctx.device, ctx.caps, 'persist.w1', all.subarray(m.texel * 16, m.texel * 16 + m.bytes)));
  stores.push(...each);
  // int8 x: each quant word 0x01020304, each block's scale 2^-7 (q8BlockLayout: 9 vec4s a 4-block group).
  const xq = new Uint32Array(q8RowVec4s(maxK) * 4).map((_, i) => (Math.floor(i / 4) % 9 === 8 ? 0x3c000000 : 0x01020304));
  const x = ctx.storage('persist.x', xq.byteLength, xq);
  const y = ctx.storage('persist.y', maxN * 4);
  const phases = new Uint32Array(mats.length * MATMUL_PARAM_WORDS);
  mats.forEach((m, i) => phases.set([1, m.n, m.k, 0, 0, q8RowVec4s(m.k), 0, m.n, m.texel], i * MATMUL_PARAM_WORDS));
  const phaseBuf = ctx.storage('persist.phases', phases.byteLength, phases);
  const grid = ctx.storage('persist.grid', 16);
  const arena = new ParamArena(ctx, mats.length + 1);
  try {
    const kernel = new MatVecKernel(ctx, type, 1, 'rows', { xq8: true });
    const groups = each.map((w) => kernel.bind(w, x, y));
    const byDispatch = arenaPass(ctx.device, arena, (pass) => mats.forEach((m, i) => kernel.encode(pass, arena, groups[i], { t: 1, n: m.n, k: m.k, xStride: q8RowVec4s(m.k) })));
    const chain = ctx.kernel({ label: 'probe-persistent-products', code: persistentSource(ctx, type), bindings: ['weights', 'read', 'write', 'read', 'write'], constants: { WG, WORKGROUPS: workgroups } });
    const chainGroup = chain.bind([stores[0], x, y, phaseBuf, grid]);
    const start = new Uint32Array([0, 0, 0xffffffff, 0]);
    let failed = 0;
    let fewest = 0xffffffff;
    const persistentRun = arenaPass(ctx.device, arena, (pass) => {
      ctx.device.queue.writeBuffer(grid, 0, start);
      arena.dispatch(pass, chain, chainGroup, arena.slot(), workgroups, 1);
    });
    const counted = async () => {
      const ms = await persistentRun();
      const words = await readWords(ctx.device, grid, 3);
      failed += words[1];
      fewest = Math.min(fewest, words[2]);
      return ms;
    };
    const last = mats[mats.length - 1].n;
    await firstRun(ctx.device, byDispatch, 'persistent probe: one dispatch a product');
    const want = await readWords(ctx.device, y, last);
    await firstRun(ctx.device, counted, 'persistent probe: persistent products');
    const got = await readWords(ctx.device, y, last);
    const sameBits = want.every((v, i) => v === got[i]) && want.some((v) => v !== 0);
    const dispatchMs = await bestOf(runs, byDispatch);
    const persistentMs = await bestOf(runs, counted);
    return { type: 'Q8_0', products: mats.length, weightBytes: all.byteLength, workgroups, dispatchMs, persistentMs, sameBits, failedBarriers: failed, fewestArrivals: fewest };
  } finally {
    for (const s of stores) s.destroy();
    for (const b of [x, y, phaseBuf, grid, arena.buffer]) b.destroy();
  }
}
