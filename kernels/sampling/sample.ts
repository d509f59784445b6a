import common from './common.wgsl?raw';
import maskTest from './mask.wgsl?raw';
import partialSource from './sample-partial.wgsl?raw';
import mergeSource from './sample-merge.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';

/** Bytes per row of the per-row sampling settings buffer (struct SampleRow in common.wgsl). */
export const SAMPLE_ROW_BYTES = 16;
/** Words per row of the sample kernel's output: [token, logprob bits]. */
export const SAMPLE_OUT_WORDS = 2;
/** Token written when the mask allowed nothing. */
export const NO_TOKEN = 0xffffffff;
/** Vocabulary entries per partial (CHUNK in sample-partial.wgsl). */
const CHUNK = 256;
const PARTIAL_BYTES = 20;
const PARTIAL_WG = 64;
const MERGE_WG = 16;

/** Bytes of the scratch buffer the split sampler needs for `rows` rows of a `vocab`-sized vocabulary. */
export function samplePartialsBytes(rows: number, vocab: number): number {
  return rows * Math.ceil(vocab / CHUNK) * PARTIAL_BYTES;
}

/** Write one row of sampling settings into a CPU mirror of the settings buffer. */
export function writeSampleRow(u32: Uint32Array, f32: Float32Array, row: number, s: { temperature: number; seed: number; counter: number; useMask: boolean }): void {
  const b = row * (SAMPLE_ROW_BYTES / 4);
  f32[b] = s.temperature;
  u32[b + 1] = s.seed >>> 0;
  u32[b + 2] = s.counter >>> 0;
  u32[b + 3] = s.useMask ? 1 : 0;
}

export interface SampleDispatch {
  rows: number;
  vocab: number;
  logitsStride: number;
  maskWords: number;
}

export interface SampleGroups {
  partial: GPUBindGroup;
  merge: GPUBindGroup;
}

/**
 * One token per row, chosen on the GPU: argmax at temperature 0, Gumbel-max sampling otherwise, with
 * the chosen token's log-probability. Two barrier-free passes: chunks of the vocabulary, then a merge
 * per row. Buffers: logits, mask, settings (read), partials (scratch), out ([token, logprob] per row).
 */
export class SampleKernel {
  readonly partial: CompiledKernel;
  readonly merge: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.partial = ctx.kernel({ label: 'sample-partial', code: wgsl(common, maskTest, partialSource), bindings: ['read', 'read', 'read', 'write'], constants: { WG: PARTIAL_WG } });
    this.merge = ctx.kernel({ label: 'sample-merge', code: wgsl(common, mergeSource), bindings: ['read', 'write'], constants: { WG: MERGE_WG } });
  }

  bind(logits: GPUBuffer, mask: GPUBuffer, settings: GPUBuffer, partials: GPUBuffer, out: GPUBuffer): SampleGroups {
    return { partial: this.partial.bind([logits, mask, settings, partials]), merge: this.merge.bind([partials, out]) };
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, groups: SampleGroups, p: SampleDispatch): void {
    const chunks = Math.ceil(p.vocab / CHUNK);
    this.dispatch(pass, arena, this.partial, groups.partial, p, chunks, Math.ceil(chunks / PARTIAL_WG), p.rows);
    this.dispatch(pass, arena, this.merge, groups.merge, p, chunks, Math.ceil(p.rows / MERGE_WG), 1);
  }

  /** Both passes read the same parameters; written out twice rather than through a per-step array. */
  private dispatch(pass: GPUComputePassEncoder, arena: ParamArena, kernel: CompiledKernel, group: GPUBindGroup, p: SampleDispatch, chunks: number, x: number, y: number): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.vocab;
    arena.u32[s + 2] = p.logitsStride;
    arena.u32[s + 3] = p.maskWords;
    arena.u32[s + 4] = chunks;
    arena.dispatch(pass, kernel, group, s, x, y);
  }
}
