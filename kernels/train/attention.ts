import forward from './attention-forward.wgsl?raw';
import backwardQ from './attention-backward-q.wgsl?raw';
import backwardKv from './attention-backward-kv.wgsl?raw';
import io from './attention-io.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import type { GpuCaps } from '../runtime/caps.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';
import { checkLoopBudget } from '../runtime/loop-budget.ts';
import { unrollLines, unrollLinesInChunks } from '../unroll.ts';

const WG = 64;

/**
 * The most vectors of a head whose lines the kernels write out in full on CPU rasterisers; a longer
 * head's lines are written out a chunk of this many at a time, in a loop over its chunks. Written out in
 * full, a head of 64 vec4s (head size 256) kept four arrays of 64 vec4s in registers across the loop over
 * keys, and llvmpipe's first compile of the three kernels took 242 s on a 2-core Zen 4 host at 512-bit
 * vectors and more than 600 s on a Zen 5 (the CI test timed out); in chunks of 16, 79 s there (56 s in
 * chunks of 8). A chunk loop costs its passes against llvmpipe's loop budget at every key (loopPasses),
 * so chunks are long: a head of 256 then trains on sequences of up to ~5000 tokens there (~3100 in chunks
 * of 8). Heads of up to 64 values (SmolLM2, Llama 3.2) are written out in full as before.
 */
const HEAD_CHUNK = 16;

export interface TrainAttentionParams {
  tokens: number;
  heads: number;
  kvHeads: number;
}

/**
 * Causal GQA attention over packed sequences and its gradients, for one head size.
 *   forward:    q, k, v, span (read), out, stats (write)
 *   backwardQ:  q, k, v, span, out, dout (read), stats, dq (write)
 *   backwardKv: q, k, v, span, dout, stats (read), dk, dv (write)
 * q, k, v and span come first in all three: attention-io.wgsl declares them once.
 * span holds [first token of the sequence, one past its last] per token; stats [lse, D] per (token, head).
 */
export class TrainAttentionKernels {
  readonly forward: CompiledKernel;
  readonly backwardQ: CompiledKernel;
  readonly backwardKv: CompiledKernel;
  /** Vectors (vec4f, or f32 where the head size is no multiple of 4) a head holds. */
  private readonly hdv: number;
  /** Whole chunks of HEAD_CHUNK vectors the kernels loop over at each key; 0 where a head is written out in full. */
  private readonly chunks: number;
  constructor(
    ctx: KernelContext,
    readonly headDim: number,
  ) {
    if (!Number.isInteger(headDim) || headDim <= 0 || headDim > 256) throw new Error(`training attention supports head sizes 1..256, not ${headDim}`);
    // Head vectors as vec4s where the head size allows: a quarter of the loads, each a gather on CPU
    // rasterisers.
    const vec4 = headDim % 4 === 0;
    const hdv = (this.hdv = vec4 ? headDim / 4 : headDim);
    // Chunked on CPU rasterisers only, where the compile time is LLVM's at the CPU's vector width and the
    // loop budget applies; GPU compilers take the written-out head, and have no loop budget.
    this.chunks = ctx.caps.software && hdv > HEAD_CHUNK ? Math.floor(hdv / HEAD_CHUNK) : 0;
    const head = (template: string) => (this.chunks > 0 ? unrollLinesInChunks(template, '$d', hdv, HEAD_CHUNK, 'params.head_chunks') : unrollLines(template, '$d', hdv));
    const hd = vec4
      ? `const HD: u32 = ${headDim}u;\nalias V = vec4f;\nconst HDV: u32 = ${hdv}u;\nfn vdot(a: V, b: V) -> f32 { return dot(a, b); }`
      : `const HD: u32 = ${headDim}u;\nalias V = f32;\nconst HDV: u32 = ${hdv}u;\nfn vdot(a: V, b: V) -> f32 { return a * b; }`;
    this.forward = ctx.kernel({ label: `train-attention-forward-${headDim}`, code: wgsl(hd, io, head(forward)), bindings: ['read', 'read', 'read', 'read', 'write', 'write'], constants: { WG } });
    this.backwardQ = ctx.kernel({
      label: `train-attention-backward-q-${headDim}`,
      code: wgsl(hd, io, head(backwardQ)),
      bindings: ['read', 'read', 'read', 'read', 'read', 'read', 'write', 'write'],
      constants: { WG },
    });
    this.backwardKv = ctx.kernel({
      label: `train-attention-backward-kv-${headDim}`,
      code: wgsl(hd, io, head(backwardKv)),
      bindings: ['read', 'read', 'read', 'read', 'read', 'read', 'write', 'write'],
      constants: { WG },
    });
  }

  /**
   * Loop passes one invocation runs for sequences of up to `tokens` tokens, the most of the three kernels
   * (runtime/loop-budget.ts): the key/value pass walks, for its token, every later token of the sequence
   * and each query head sharing its KV head (group + 2 passes a token, and where a head is chunked, two
   * loops over its chunks for each query head: 2 · group · (chunks + 1) more); the head's own loads and
   * stores, still loops, add at most 8 · (HDV + 1).
   */
  loopPasses(tokens: number, heads: number, kvHeads: number): number {
    const group = heads / kvHeads;
    const chunkPasses = this.chunks > 0 ? 2 * group * (this.chunks + 1) : 0;
    return tokens * (group + 2 + chunkPasses) + 8 * (this.hdv + 1) + 16;
  }

  /** Refuses sequences of `tokens` tokens where this adapter would end the kernels' loops early. */
  checkSequenceTokens(caps: GpuCaps, tokens: number, heads: number, kvHeads: number): void {
    checkLoopBudget(caps, `training attention over a sequence of ${tokens} tokens (lower maxTokens)`, this.loopPasses(tokens, heads, kvHeads));
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, which: 'forward' | 'backwardQ' | 'backwardKv', group: GPUBindGroup, p: TrainAttentionParams): void {
    const s = arena.slot();
    arena.u32[s] = p.tokens;
    arena.u32[s + 1] = p.heads;
    arena.u32[s + 2] = p.kvHeads;
    arena.f32[s + 3] = 1 / Math.sqrt(this.headDim);
    arena.u32[s + 4] = this.chunks;
    const rows = which === 'backwardKv' ? p.tokens * p.kvHeads : p.tokens * p.heads;
    const [gx, gy] = grid2d(Math.ceil(rows / WG));
    arena.dispatch(pass, this[which], group, s, gx, gy);
  }
}
