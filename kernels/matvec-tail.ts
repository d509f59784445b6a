/**
 * Tails: the pass after a CPU rasteriser's decode product, folded into the product's invocations
 * (matvec-tail.wgsl says how). Three are built: the RMSNorm that turns the residual stream the product
 * wrote into the next products' int8 x ('norm-q8': after the O and down products; the last invocation of
 * each group's rows quantizes that group, the one that finishes the last group puts the norm's factor
 * on the scales), the gated activation of a gate|up product written as the down product's int8 x
 * ('glu-q8': the last invocation of each group's rows quantizes that group), and RoPE with the KV-cache
 * store after a stacked Q|K|V product ('rope-kv': the last invocation of each head's rows moves the head).
 * Each gives the same bits as the pass it replaces (rmsnorm-serial-q8.wgsl, swiglu-q8.wgsl,
 * rope-kv-store-vec4.wgsl).
 */
import { activationWgsl, type Activation } from './activation.ts';
import { xqGroup, type XqMode, Q8_BLOCK_WGSL } from './quantize-x.ts';
import { wgsl, type BindingKind } from './runtime/context.ts';
import counter from './matvec-tail.wgsl?raw';
import yScalar from './matvec-tail-y.wgsl?raw';
import yVec4s from './matvec-tail-y4.wgsl?raw';
import none from './matvec-tail-none.wgsl?raw';
import normQ8 from './matvec-tail-norm-q8.wgsl?raw';
import gluQ8 from './matvec-tail-glu-q8.wgsl?raw';
import ropeKv from './matvec-tail-rope-kv.wgsl?raw';
import cacheF16 from './rope-kv-store-cache-f16.wgsl?raw';
import cacheF32 from './rope-kv-store-cache-f32.wgsl?raw';
import ropeVec4 from './rope-vec4.wgsl?raw';
import angle from './rope-angle.wgsl?raw';
import type { KvFormat } from './kv-format.ts';
import type { RopeSettings } from './rope.ts';
import { fitsVec4Rope } from './rope-kv-store.ts';

export type ProductTail = { kind: 'norm-q8'; mode: XqMode } | { kind: 'glu-q8'; mode: XqMode; activation: Activation } | { kind: 'rope-kv'; kv: KvFormat };

/** A 'rope-kv' tail's shape: RopeKvStoreParams without the per-step token count and stride. */
export interface RopeTail extends RopeSettings {
  heads: number;
  kvHeads: number;
  headDim: number;
  pageSize: number;
  maxPages: number;
}

/** Where a dispatch's tail reads its input in the product's y, in elements. */
export interface TailParams {
  /** Values per row: the norm's width, or the activation's (gate|up is twice that). */
  n: number;
  inOffset: number;
  inStride: number;
  /** 'norm-q8': the RMSNorm epsilon. */
  eps?: number;
  /** 'glu-q8': elements from a gate value to its up value. */
  up?: number;
  /** 'rope-kv': heads, paging and rotation. */
  rope?: RopeTail;
}

/**
 * The tail's bindings after the product's own: its counters (zeroed words, tailCounterWords of them), the
 * norm weight ('norm-q8'), the int8 output.
 */
export function tailBindings(tail: ProductTail | undefined): BindingKind[] {
  if (!tail) return [];
  if (tail.kind === 'rope-kv') return ['write', 'read', 'read', 'read', 'read', 'write', 'write'];
  return tail.kind === 'norm-q8' ? ['write', 'read', 'write'] : ['write', 'write'];
}

/** The KV cache's stores (rope-kv-store-cache-*.wgsl) with the tail's binding numbers. */
function cacheStores(kv: KvFormat): string {
  const code = kv === 'f16' ? cacheF16 : cacheF32;
  const renumbered = code.replace('@group(0) @binding(5)', '@group(0) @binding(TAIL_BINDING_5)').replace('@group(0) @binding(6)', '@group(0) @binding(TAIL_BINDING_6)');
  if (!renumbered.includes('TAIL_BINDING_5') || !renumbered.includes('TAIL_BINDING_6')) throw new Error('matvec-tail: the KV-cache stores no longer bind k_cache and v_cache at 5 and 6');
  return renumbered;
}

/** The tail's WGSL with its first binding at `binding` (after_rows() that does nothing without a tail). */
export function tailCode(tail: ProductTail | undefined, binding: number, y4 = false): string {
  if (!tail) return none;
  const own = tail.kind === 'norm-q8' ? wgsl(normQ8, Q8_BLOCK_WGSL) : tail.kind === 'glu-q8' ? wgsl(gluQ8, activationWgsl(tail.activation), Q8_BLOCK_WGSL) : wgsl(ropeKv, cacheStores(tail.kv), ropeVec4, angle);
  return wgsl(counter, y4 ? yVec4s : yScalar, own).replace(/TAIL_BINDING(?:_(\d))?/g, (_, i: string | undefined) => String(binding + Number(i ?? 0)));
}

/** Pipeline constants the tail's code needs, for a kernel whose invocations compute `rows` weight rows each. */
export function tailConstants(tail: ProductTail | undefined, rows: number): Record<string, number> {
  if (!tail) return {};
  if (tail.kind === 'rope-kv') return { TAIL_ROWS: rows };
  return { XQ_GROUP: xqGroup(tail.mode), TAIL_ROWS: rows };
}

/** Rows of x a matrix-vector product takes at most (MAX_MATVEC_T in matvec.ts, which imports this file). */
const TAIL_MAX_ROWS = 8;

/**
 * Counter words a tail uses: one per group of activations ('glu-q8'), per head ('rope-kv'); 'norm-q8':
 * one per group, one for the groups done, and a sum of squares per group for each of `rows` rows of x.
 */
export function tailCounterWords(tail: ProductTail, p: TailParams, rows = TAIL_MAX_ROWS): number {
  if (tail.kind === 'glu-q8') return p.n / xqGroup(tail.mode);
  if (tail.kind === 'rope-kv') return p.rope ? p.rope.heads + 2 * p.rope.kvHeads : 0;
  const groups = p.n / xqGroup(tail.mode);
  return groups * (1 + rows) + 1;
}

export function tailSuffix(tail: ProductTail | undefined): string {
  if (!tail) return '';
  if (tail.kind === 'rope-kv') return `-tail-rope-kv${tail.kv === 'f16' ? '16' : ''}`;
  return `-tail-${tail.kind}-${tail.mode}${tail.kind === 'glu-q8' && tail.activation === 'gelu' ? '-gelu' : ''}`;
}

/**
 * Whether a RoPE tail can move these heads from token rows `inStride` apart, starting at `inOffset`, in a
 * kernel whose invocations compute `rowsPerInvocation` weight rows: the vec4 RoPE layout, and each head
 * whole invocations' rows.
 */
export function ropeTailFits(r: RopeTail, inOffset: number, inStride: number, rowsPerInvocation: number): boolean {
  return fitsVec4Rope({ ...r, tokenStride: inStride }) && inOffset % 4 === 0 && r.headDim % rowsPerInvocation === 0 && r.nRot <= r.headDim;
}

/**
 * Checks a dispatch's tail against the tail's mode (whole groups, vec4-aligned rows) and the dispatch:
 * a gated tail's gate and up rows are all of the dispatch's `rows`, from row 0 of the matrix.
 */
export function checkTailParams(label: string, tail: ProductTail, p: TailParams, rows: number, rowOffset: number, rowsPerInvocation: number): void {
  if (tail.kind === 'rope-kv') {
    const r = p.rope;
    if (!r) throw new Error(`${label}: a RoPE tail needs its heads, paging and rotation`);
    const width = (r.heads + 2 * r.kvHeads) * r.headDim;
    if (rows !== width || rowOffset !== 0) throw new Error(`${label}: a RoPE tail's product is one dispatch of every Q, K and V head (${width} rows), not ${rows} rows from row ${rowOffset}`);
    if (!ropeTailFits(r, p.inOffset, p.inStride, rowsPerInvocation)) {
      throw new Error(`${label}: a RoPE tail needs a head dim that is a multiple of 4 and of ${rowsPerInvocation}, token rows at multiples of 4, and rotated dims a multiple of 4 (8 in NeoX order), at most the head dim`);
    }
    return;
  }
  const group = xqGroup(tail.mode);
  if (tail.kind === 'norm-q8' && (rows !== p.n || rowOffset !== 0)) throw new Error(`${label}: a norm tail's product is one dispatch of all the norm's ${p.n} rows, not ${rows} rows from row ${rowOffset}`);
  if (tail.kind === 'glu-q8' && (rows !== 2 * p.n || p.up !== p.n || rowOffset !== 0)) throw new Error(`${label}: a gated tail's product is one dispatch of gate then up rows (${2 * p.n} rows, up ${p.n} after gate), not ${rows} rows from row ${rowOffset}`);
  const by4 = [p.inOffset, p.inStride, p.up ?? 0].every((v) => v % 4 === 0);
  if (p.n % group !== 0 || !by4) throw new Error(`${label}: a tail's width ${p.n} must be a multiple of ${group} and its input offset, stride and up distance of 4`);
  if (tail.kind === 'norm-q8' && p.eps === undefined) throw new Error(`${label}: a norm tail needs its epsilon`);
  if (tail.kind === 'glu-q8' && p.up === undefined) throw new Error(`${label}: a gated tail needs the distance from gate to up`);
}
