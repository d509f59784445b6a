/**
 * Tails: the pass after a CPU rasteriser's decode product, folded into the product's invocations
 * (matvec-tail.wgsl says how). Two are built: the RMSNorm that turns the residual stream the product
 * wrote into the next products' int8 x ('norm-q8': after the O and down products; the dispatch's last
 * invocation runs it), and the gated activation of a gate|up product written as the down product's int8
 * x ('glu-q8': the last invocation of each group's rows quantizes that group). Each gives the same bits
 * as the pass it replaces (rmsnorm-serial-q8.wgsl, swiglu-q8.wgsl).
 */
import { activationWgsl, type Activation } from './activation.ts';
import q8Block from './quantize-x-block.wgsl?raw';
import { xqGroup, type XqMode } from './quantize-x.ts';
import type { BindingKind } from './runtime/context.ts';
import { wgsl } from './runtime/context.ts';
import counter from './matvec-tail.wgsl?raw';
import none from './matvec-tail-none.wgsl?raw';
import normQ8 from './matvec-tail-norm-q8.wgsl?raw';
import gluQ8 from './matvec-tail-glu-q8.wgsl?raw';

export type ProductTail = { kind: 'norm-q8'; mode: XqMode } | { kind: 'glu-q8'; mode: XqMode; activation: Activation };

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
}

/**
 * The tail's bindings after the product's own: its counters (zeroed words, tailCounterWords of them), the
 * norm weight ('norm-q8'), the int8 output.
 */
export function tailBindings(tail: ProductTail | undefined): BindingKind[] {
  if (!tail) return [];
  return tail.kind === 'norm-q8' ? ['write', 'read', 'write'] : ['write', 'write'];
}

/** The tail's WGSL with its first binding at `binding` (after_rows() that does nothing without a tail). */
export function tailCode(tail: ProductTail | undefined, binding: number): string {
  if (!tail) return none;
  const own = tail.kind === 'norm-q8' ? normQ8 : wgsl(gluQ8, activationWgsl(tail.activation));
  const code = wgsl(counter, own, q8Block);
  return code.replaceAll('TAIL_BINDING_2', String(binding + 2)).replaceAll('TAIL_BINDING_1', String(binding + 1)).replaceAll('TAIL_BINDING', String(binding));
}

/** Pipeline constants the tail's code needs, for a kernel whose invocations compute `rows` weight rows each. */
export function tailConstants(tail: ProductTail | undefined, rows: number): Record<string, number> {
  if (!tail) return {};
  return tail.kind === 'glu-q8' ? { XQ_GROUP: xqGroup(tail.mode), TAIL_ROWS: rows } : { XQ_GROUP: xqGroup(tail.mode) };
}

/** Counter words a tail of width n uses (a 'glu-q8' tail one per group of its activations). */
export function tailCounterWords(tail: ProductTail, n: number): number {
  return tail.kind === 'glu-q8' ? n / xqGroup(tail.mode) : 1;
}

export function tailSuffix(tail: ProductTail | undefined): string {
  return tail ? `-tail-${tail.kind}-${tail.mode}${tail.kind === 'glu-q8' && tail.activation === 'gelu' ? '-gelu' : ''}` : '';
}

/**
 * Checks a dispatch's tail against the tail's mode (whole groups, vec4-aligned rows) and the dispatch:
 * a gated tail's gate and up rows are all of the dispatch's `rows`, from row 0 of the matrix.
 */
export function checkTailParams(label: string, tail: ProductTail, p: TailParams, rows: number, rowOffset: number): void {
  const group = xqGroup(tail.mode);
  if (tail.kind === 'glu-q8' && (rows !== 2 * p.n || p.up !== p.n || rowOffset !== 0)) throw new Error(`${label}: a gated tail's product is one dispatch of gate then up rows (${2 * p.n} rows, up ${p.n} after gate), not ${rows} rows from row ${rowOffset}`);
  const by4 = [p.inOffset, p.inStride, p.up ?? 0].every((v) => v % 4 === 0);
  if (p.n % group !== 0 || !by4) throw new Error(`${label}: a tail's width ${p.n} must be a multiple of ${group} and its input offset, stride and up distance of 4`);
  if (tail.kind === 'norm-q8' && p.eps === undefined) throw new Error(`${label}: a norm tail needs its epsilon`);
  if (tail.kind === 'glu-q8' && p.up === undefined) throw new Error(`${label}: a gated tail needs the distance from gate to up`);
}
