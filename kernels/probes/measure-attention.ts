/**
 * How long a decode step's attention takes on this adapter, with each (token, head) pair's positions in
 * one workgroup and split over several (AttentionParams.splits, flash-decoding): `layers` dispatches of
 * one model shape, each layer its own K and V cache, `tokens` sequences each decoding its position
 * `span` - 1, timed as one pass (best of `runs` submits) and read as GB/s of K and V. Every split count's
 * output must equal the unsplit kernel's before any time counts.
 */
import { AttentionKernel } from '../attention.ts';
import { ParamArena } from '../runtime/arena.ts';
import type { KernelContext } from '../runtime/context.ts';
import { readWords } from './readback.ts';
import { arenaPass, bestOf, firstRun } from './timing.ts';

export interface AttentionShape {
  label: string;
  heads: number;
  kvHeads: number;
  headDim: number;
  layers: number;
}

export interface AttentionRate {
  shape: string;
  tokens: number;
  span: number;
  splits: number;
  /** Dispatches of the timed pass: a layer's attention, and its combine pass where split. */
  dispatches: number;
  ms: number;
  kvBytes: number;
  GBps: number;
}

const PAGE = 16;

/** Values in [-1, 1) from a fixed seed (timing does not depend on them; the split check does a little). */
function pattern(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

export async function measureDecodeAttention(ctx: KernelContext, shape: AttentionShape, tokens: number, span: number, splitCounts: number[], runs = 5): Promise<AttentionRate[]> {
  const { heads, kvHeads, headDim: hd, layers } = shape;
  // The GPU kernel whatever the adapter (CPU adapters run it too, in the tests).
  const kernel = new AttentionKernel(ctx, 'workgroup');
  const kvDim = kvHeads * hd;
  const maxPages = Math.ceil(span / PAGE);
  // Sequence t's pages: t * maxPages onwards.
  const pageTable = Uint32Array.from({ length: tokens * maxPages }, (_, i) => i);
  const rows = tokens * maxPages * PAGE;
  const bufs: GPUBuffer[] = [];
  const track = (b: GPUBuffer) => (bufs.push(b), b);
  const q = track(ctx.storage('att-q', tokens * heads * hd * 4, pattern(tokens * heads * hd, 7)));
  const pages = track(ctx.storage('att-pages', pageTable.byteLength, pageTable));
  const positions = track(ctx.storage('att-pos', tokens * 4, new Uint32Array(tokens).fill(span - 1)));
  const seqs = track(ctx.storage('att-seq', tokens * 4, Uint32Array.from({ length: tokens }, (_, t) => t)));
  const out = track(ctx.storage('att-out', tokens * heads * hd * 4));
  const partials = track(ctx.storage('att-partials', AttentionKernel.partialsBytes(hd)));
  const cacheValues = pattern(rows * kvDim, 11);
  const caches = Array.from({ length: layers }, () => ({ k: track(ctx.storage('att-k', rows * kvDim * 4, cacheValues)), v: track(ctx.storage('att-v', rows * kvDim * 4, cacheValues.map((x) => -x))) }));
  const combine = kernel.bindCombine(partials, out);
  const params = { tokens, heads, kvHeads, headDim: hd, pageSize: PAGE, maxPages, scale: 1 / Math.sqrt(hd) };
  const result: AttentionRate[] = [];
  let reference: Uint32Array | undefined;
  for (const splits of [1, ...splitCounts.filter((s) => s > 1)]) {
    const groups = caches.map((c) => kernel.bind(q, c.k, c.v, pages, positions, seqs, splits > 1 ? partials : out));
    const arena = new ParamArena(ctx, 2 * layers);
    const once = arenaPass(ctx.device, arena, (pass) => {
      for (const g of groups) kernel.encode(pass, arena, g, { ...params, splits }, combine);
    });
    await firstRun(ctx.device, once, `attention probe, ${splits} splits`);
    const got = new Float32Array((await readWords(ctx.device, out, tokens * heads * hd)).buffer);
    if (!reference) reference = new Uint32Array(got.buffer);
    else {
      const want = new Float32Array(reference.buffer);
      const worst = got.reduce((m, x, i) => Math.max(m, Math.abs(x - want[i]) / Math.max(1e-3, Math.abs(want[i]))), 0);
      if (!(worst < 1e-3)) throw new Error(`attention probe: ${splits} splits differ from one workgroup a pair by ${worst} (relative)`);
    }
    const ms = await bestOf(runs, once);
    const kvBytes = layers * tokens * span * kvDim * 4 * 2;
    result.push({ shape: shape.label, tokens, span, splits, dispatches: layers * (splits > 1 ? 2 : 1), ms, kvBytes, GBps: kvBytes / ms / 1e6 });
    arena.buffer.destroy();
  }
  for (const b of bufs) b.destroy();
  return result;
}
