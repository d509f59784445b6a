/**
 * A layer's stacked Q|K|V decode product with its RoPE + KV-store tail, then attention, in one dispatch of
 * persistent workgroups on llvmpipe (qkv-chain.wgsl; what chains are: chain.ts). The phases are the
 * engine's own kernels, the product's rows kernel (rowsKernelBody) and attention's serial vec4 kernel
 * (serialVec4Spec), unsplit or split over positions as the engine would dispatch it, so the outputs are
 * the bits of the two dispatches (test/engine/layer-chains.test.ts holds an engine's tokens and
 * log-probabilities equal with chains off, at spans both sides of the split).
 *
 * One change to the product's code: the tail's f16 KV-cache stores write a vec2u a vec4 (two halves a
 * word, rope-kv-store-cache-f16.wgsl) into caches attention reads as vec4u; one shader can declare a
 * buffer once, so here the tail stores the same words as components of the vec4u array.
 *
 * The joined shader's bindings: 0 the Q|K|V weights; 1 the normed int8 x; 2 the Q|K|V rows (the product's y,
 * attention's q); 3 the tails' counters; 4 positions; 5 each token's sequence; 6 the page table; 7 RoPE's
 * frequency factors; 8, 9 the layer's K and V caches; 10 attention's int8 output (O's x); 11 the
 * product's params (`phases`: one per rows-of-x count); 12 the grid barrier's words; split only: 13 the
 * partial sums, 14 their counters.
 */
import { typeName, type GgmlType } from '../ggml/types.ts';
import { groupedHeads, serialVec4Spec, writeAttentionParams, type AttentionParams } from './attention.ts';
import { chainLanes, CHAIN_CHECK_PASSES, gridWgsl, matmulParamWords, MIN_SPIN_PASSES, productLink, productLoopPasses, spinPassesLeft } from './chain.ts';
import type { MatmulParams } from './matmul-params.ts';
import { tailConstants, type ProductTail, type RopeTail } from './matvec-tail.ts';
import { rowsPerInvocationFor } from './matvec.ts';
import chainWgsl from './qkv-chain.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import { wgsl, type BindingKind, type CompiledKernel, type KernelContext } from './runtime/context.ts';
import { namespaceWgsl, rebindWgsl } from './runtime/wgsl-namespace.ts';
import type { WeightStore } from './runtime/weights.ts';

export interface QkvChainShape {
  dim: number;
  type: GgmlType;
  rope: RopeTail;
  /** Most positions a sequence holds (the KV cache's), for the attention walk's worst case. */
  maxPositions: number;
}

export interface QkvChainBuffers {
  qkv: WeightStore;
  xNormQ8: GPUBuffer;
  qkvOut: GPUBuffer;
  counters: GPUBuffer;
  positions: GPUBuffer;
  tokenSeq: GPUBuffer;
  pageTable: GPUBuffer;
  factors: GPUBuffer;
  kCache: GPUBuffer;
  vCache: GPUBuffer;
  attnQ8: GPUBuffer;
  phases: GPUBuffer;
  grid: GPUBuffer;
  /** The split kernel's partial sums and counters (AttentionKernel.bindSerialSplit's). */
  partials: GPUBuffer;
  splitCounters: GPUBuffer;
}

const PHASES = 11;
const GRID = 12;
const OWN: readonly BindingKind[] = ['texture', 'write', 'write', 'write', 'write', 'write', 'write', 'write', 'write', 'write', 'write', 'read', 'write'];
const SPLIT: readonly BindingKind[] = [...OWN, 'write', 'write'];

/** The f16 cache stores as rope-kv-store-cache-f16.wgsl writes them (a vec2u a vec4), and as components of a vec4u array. */
const STORE_PAIRS = [
  ['var<storage, read_write> k_cache: array<vec2u>;', 'var<storage, read_write> k_cache: array<vec4u>;'],
  ['var<storage, read_write> v_cache: array<vec2u>;', 'var<storage, read_write> v_cache: array<vec4u>;'],
  ['  k_cache[i] = vec2u(pack2x16float(v.xy), pack2x16float(v.zw));', '  k_cache[i >> 1u][(i & 1u) * 2u] = pack2x16float(v.xy);\n  k_cache[i >> 1u][(i & 1u) * 2u + 1u] = pack2x16float(v.zw);'],
  ['  v_cache[i] = vec2u(pack2x16float(v.xy), pack2x16float(v.zw));', '  v_cache[i >> 1u][(i & 1u) * 2u] = pack2x16float(v.xy);\n  v_cache[i >> 1u][(i & 1u) * 2u + 1u] = pack2x16float(v.zw);'],
] as const;

function storesAsWords(code: string): string {
  for (const [from, to] of STORE_PAIRS) {
    if (!code.includes(from)) throw new Error('qkv-chain: rope-kv-store-cache-f16.wgsl no longer stores the cache as this chain rewrites it');
    code = code.replace(from, to);
  }
  return code;
}

/** Query heads an attention invocation of the chain computes: all that share a KV head where the split kernel groups them, else one. */
function attentionGroup(shape: QkvChainShape, split: boolean): number {
  return split ? groupedHeads(shape.rope.heads, shape.rope.kvHeads, shape.rope.headDim) : 1;
}

/** Loop passes one persistent workgroup of the chain takes at most (chain.ts): the product, then attention's walk. */
export function qkvChainLoopPasses(ctx: KernelContext, shape: QkvChainShape, t: number, workgroups: number, split: boolean): number {
  const r = shape.rope;
  const n = (r.heads + 2 * r.kvHeads) * r.headDim;
  // The RoPE tail: per row of x, its head's vec4s rotated and stored (loops of the head's vec4 pairs).
  const product = productLoopPasses(ctx, { n, k: shape.dim, type: shape.type }, t, workgroups, r.headDim / 2 + 8);
  const items = (t * r.heads) / attentionGroup(shape, split);
  // Unsplit: spans below the split's start; split: at least two runs of the longest span.
  const walk = split ? Math.ceil(shape.maxPositions / 2) : 128;
  const calls = Math.ceil(Math.ceil(items * (split ? 32 : 1) / chainLanes(ctx)) / workgroups);
  return product + calls * (walk + 2 + (split ? 3 * 32 + r.headDim : 0) + 8) + calls + 1;
}

export class QkvChainKernel {
  readonly kernel: CompiledKernel;
  readonly label: string;

  constructor(
    ctx: KernelContext,
    readonly shape: QkvChainShape,
    readonly t: number,
    readonly workgroups: number,
    /** Attention split over positions (the serial split kernel) or not. */
    readonly split: boolean,
    spinBudget?: number,
  ) {
    if (!ctx.caps.orderedAtomics || !ctx.caps.weightTextures) throw new Error('qkv-chain: needs llvmpipe (atomics that order the stores before them, weights in textures)');
    const lanes = chainLanes(ctx);
    const r = shape.rope;
    this.label = `qkv-chain-${typeName(shape.type)}-t${t}-w${workgroups}${split ? '-split' : ''}`;
    const left = spinPassesLeft(ctx, qkvChainLoopPasses(ctx, shape, t, workgroups, split));
    if (left < MIN_SPIN_PASSES) throw new Error(`${this.label}: its phases take all but ${left} of the adapter's loop passes, too few for the barrier`);
    const tail: ProductTail = { kind: 'rope-kv', kv: 'f16' };
    const qkv = productLink(ctx, shape.type, t, tail, '_qkv', Object.fromEntries(Array.from({ length: 10 }, (_, i) => [i, { binding: i }])), storesAsWords);
    const group = attentionGroup(shape, split);
    const att = serialVec4Spec('f16', r.headDim, 'q8_0', group, 'pages', split, 1);
    const entry = '@compute @workgroup_size(WG)\nfn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u)';
    const uniform = '@group(1) @binding(0) var<uniform> params: Params;';
    if (!att.code.includes(entry) || !att.code.includes(uniform)) throw new Error('qkv-chain: the serial attention kernel no longer has the entry point and params it rewrites');
    const attBody = att.code.replace(entry, 'fn attention_body(gid: vec3u, nwg: vec3u)').replace(uniform, 'var<private> params: Params;');
    const shared = { 0: 'y_qkv', 1: 'k_cache_qkv', 2: 'v_cache_qkv', 3: 'page_table_qkv', 4: 'positions_qkv', 5: 'token_seq_qkv' } as const;
    const attMap = { ...Object.fromEntries(Object.entries(shared).map(([b, name]) => [b, { binding: Number(b), sameAs: name }])), 6: { binding: 10 }, 7: { binding: 13 }, 8: { binding: 14 } };
    const attention = rebindWgsl(namespaceWgsl(attBody, '_att'), attMap);
    const consts = (suffix: string, c: Record<string, number>) => Object.fromEntries(Object.entries(c).map(([k, v]) => [`${k}${suffix}`, v]));
    this.kernel = ctx.kernel({
      label: this.label,
      code: wgsl(qkv, attention, `const ROWS_QKV: u32 = ${rowsPerInvocationFor(shape.type)}u;\n`, gridWgsl(GRID), chainWgsl.replace('CHAIN_PHASES', String(PHASES))),
      bindings: split ? SPLIT : OWN,
      constants: {
        WG: lanes,
        WORKGROUPS: workgroups,
        SPIN_BUDGET: spinBudget ?? left,
        ...consts('_qkv', { WG: lanes, ...tailConstants(tail, rowsPerInvocationFor(shape.type)) }),
        ...consts('_att', { ...att.constants, WG: lanes }),
      },
    });
  }

  bind(b: QkvChainBuffers): GPUBindGroup {
    const own = [b.qkv, b.xNormQ8, b.qkvOut, b.counters, b.positions, b.tokenSeq, b.pageTable, b.factors, b.kCache, b.vCache, b.attnQ8, b.phases, b.grid];
    return this.kernel.bind(this.split ? [...own, b.partials, b.splitCounters] : own);
  }

  /** One dispatch: its arrival word's place among the step's chains (chainGridBytes), and its attention's params (the engine's, for this step). */
  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, gridSlot: number, attention: AttentionParams): void {
    const s = arena.slot();
    const u = arena.u32;
    u[s] = gridSlot;
    u[s + 1] = this.t - 1;
    u[s + 2] = CHAIN_CHECK_PASSES;
    const splits = attention.splits ?? 1;
    if ((splits > 1) !== this.split || attention.tokens !== this.t || attention.output !== 'q8_0') throw new Error(`${this.label}: built for ${this.t} tokens ${this.split ? 'split' : 'unsplit'}, asked for ${attention.tokens} tokens in ${splits} splits`);
    u[s + 3] = ((attention.tokens * attention.heads) / attentionGroup(this.shape, this.split)) * splits;
    // Params_att at word 4 (a struct of 4-byte members: no padding before it in the uniform).
    writeAttentionParams(u, arena.f32, s + 4, attention);
    arena.dispatch(pass, this.kernel, group, s, this.workgroups, 1);
  }
}

/** The product's `phases` words for rows of x 1..maxT: Params t - 1 is the step of t rows. */
export function qkvChainPhaseWords(ctx: KernelContext, products: (t: number) => MatmulParams, maxT: number): Uint32Array {
  return matmulParamWords(ctx, Array.from({ length: maxT }, (_, i) => products(i + 1)));
}
