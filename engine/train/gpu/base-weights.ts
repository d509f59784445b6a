/**
 * The frozen base model as the trainer reads it: every matrix dequantized once to row-major f32 on the
 * GPU, straight from the engine's packed buffers (any weight type the engine loads), so one f32 matmul
 * kernel serves every product, transposed or not. The cost is GPU memory: 4 bytes per weight of the base
 * model beside the engine's packed copy (stories260K: 1 MB; a 1B-parameter model: 4 GB), plus the
 * activations of workspace.ts. Norm vectors are the engine's own f32 buffers, shared, not copied.
 */
import type { ModelConfig } from '../../arch/types.ts';
import type { WeightMatrix } from '../../model/matrix.ts';
import type { ModelWeights } from '../../model/weights.ts';
import type { LoraTarget } from '../../lora/adapter-file.ts';
import { DequantizeKernel } from '../../../kernels/train/dequantize.ts';
import { ParamArena } from '../../../kernels/runtime/arena.ts';
import { memoize } from '../../../kernels/runtime/memo.ts';
import type { KernelContext } from '../../../kernels/runtime/context.ts';
import type { GgmlType } from '../../../ggml/types.ts';

export interface BaseLayer {
  attnNorm: GPUBuffer;
  ffnNorm: GPUBuffer;
  /** f32 row-major out × in, by target name. */
  matrices: Record<LoraTarget, GPUBuffer>;
}

export interface BaseWeights {
  embedding: GPUBuffer;
  /** The embedding buffer itself when tied. */
  head: GPUBuffer;
  outputNorm: GPUBuffer;
  layers: BaseLayer[];
  /** Per-pair RoPE divisors (the engine's), or a dummy when the model has none. */
  ropeFactors: GPUBuffer;
  useRopeFactors: boolean;
  /** The buffers this module made (destroyed with the trainer; the engine's stay). */
  owned: GPUBuffer[];
  /** Bytes of the f32 matrices. */
  bytes: number;
}

/** Rows (in, out) of each target's matrix. */
export function targetShape(cfg: ModelConfig, target: LoraTarget): { inDim: number; outDim: number } {
  const q = cfg.nHeads * cfg.headDim;
  const kv = cfg.nKvHeads * cfg.headDim;
  switch (target) {
    case 'q':
      return { inDim: cfg.dim, outDim: q };
    case 'k':
    case 'v':
      return { inDim: cfg.dim, outDim: kv };
    case 'o':
      return { inDim: q, outDim: cfg.dim };
    case 'gate':
    case 'up':
      return { inDim: cfg.dim, outDim: cfg.ffnDim };
    case 'down':
      return { inDim: cfg.ffnDim, outDim: cfg.dim };
  }
}

/**
 * `submit` runs one command buffer of dequantizing copies and resolves when the device has done it: one
 * for the embeddings and head, then one a layer, each layer's f32 buffers made just before its copies.
 * Not all at once: on llvmpipe a buffer's creation and a submit both run on the calling thread (SmolLM2's
 * 540 MB of f32 base took 1.7 s to create and 1.7 s to fill), and between submits a server answers.
 */
export async function dequantizeBase(ctx: KernelContext, cfg: ModelConfig, w: ModelWeights, submit: (cb: GPUCommandBuffer) => Promise<void>): Promise<BaseWeights> {
  const owned: GPUBuffer[] = [];
  const dequantizer = memoize((t: GgmlType) => new DequantizeKernel(ctx, t));
  const arena = new ParamArena(ctx, 4096);
  const limit = Math.min(ctx.caps.maxStorageBinding, ctx.caps.maxBufferSize);

  /** Encodes `make`'s copies into one command buffer and submits it; returns what `make` returned. */
  const batch = async <T>(make: (extract: (label: string, parts: readonly WeightMatrix[], first: number, rows: number) => GPUBuffer) => T): Promise<T> => {
    const encoder = ctx.device.createCommandEncoder({ label: 'train-dequantize' });
    const pass = encoder.beginComputePass();
    /** Rows [first, first + rows) of the stacked matrices `parts` (e.g. [q|k|v]) as one f32 matrix. */
    const extract = (label: string, parts: readonly WeightMatrix[], first: number, rows: number): GPUBuffer => {
      const cols = parts[0].cols;
      if (rows * cols * 4 > limit) throw new Error(`training needs ${label} as f32 (${rows}×${cols}, ${rows * cols * 4} bytes), more than one GPU binding holds (${limit})`);
      const out = ctx.storage(`train.${label}`, rows * cols * 4);
      owned.push(out);
      let at = 0;
      for (const m of parts) {
        if (m.cols !== cols) throw new Error(`${m.name} has ${m.cols} columns, expected ${cols}`);
        for (const shard of m.shards) {
          const from = Math.max(first, at + shard.rowStart);
          const to = Math.min(first + rows, at + shard.rowStart + shard.rows);
          if (from < to) {
            const k = dequantizer(m.type);
            const group = k.kernel.bind([shard.store, out]);
            k.encode(pass, arena, group, { rows: to - from, cols, srcRow: from - at - shard.rowStart, dstRow: from - first });
          }
        }
        at += m.rows;
      }
      if (at < first + rows) throw new Error(`${label}: the engine's matrices hold ${at} rows, expected at least ${first + rows}`);
      return out;
    };
    const made = make(extract);
    pass.end();
    arena.flush();
    await submit(encoder.finish());
    arena.reset();
    return made;
  };

  const q = cfg.nHeads * cfg.headDim;
  const kv = cfg.nKvHeads * cfg.headDim;
  let embedding: GPUBuffer;
  let head: GPUBuffer;
  const layers: BaseLayer[] = [];
  try {
    [embedding, head] = await batch((extract) => {
      const e = extract('token_embd', [w.embedding], 0, cfg.vocabSize);
      return [e, w.output === w.embedding ? e : extract('output', [w.output], 0, cfg.vocabSize)];
    });
    for (const [i, l] of w.layers.entries()) {
      const matrices = await batch((extract) => ({
        q: extract(`blk.${i}.attn_q`, l.qkv, 0, q),
        k: extract(`blk.${i}.attn_k`, l.qkv, q, kv),
        v: extract(`blk.${i}.attn_v`, l.qkv, q + kv, kv),
        o: extract(`blk.${i}.attn_output`, [l.o], 0, cfg.dim),
        gate: extract(`blk.${i}.ffn_gate`, l.gateUp, 0, cfg.ffnDim),
        up: extract(`blk.${i}.ffn_up`, l.gateUp, cfg.ffnDim, cfg.ffnDim),
        down: extract(`blk.${i}.ffn_down`, [l.down], 0, cfg.dim),
      }));
      layers.push({ attnNorm: l.attnNorm, ffnNorm: l.ffnNorm, matrices });
    }
  } catch (e) {
    for (const b of owned) b.destroy();
    throw e;
  } finally {
    arena.buffer.destroy();
  }
  const bytes = owned.reduce((sum, b) => sum + b.size, 0);
  let ropeFactors = w.ropeFactors;
  if (!ropeFactors) {
    ropeFactors = ctx.storage('train.rope-factors.none', 16, new Float32Array([1, 1, 1, 1]));
    owned.push(ropeFactors);
  }
  return {
    embedding,
    head,
    outputNorm: w.outputNorm,
    layers,
    ropeFactors,
    useRopeFactors: w.ropeFactors !== undefined,
    owned,
    bytes,
  };
}
