import type { ParamArena } from '../runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';
import type { WeightStore } from '../runtime/weights.ts';
import common from './stream-read-common.wgsl?raw';
import source from './stream-read.wgsl?raw';
import weightsSource from './stream-read-weights.wgsl?raw';

/**
 * How a dispatch splits the buffer: one contiguous range per invocation (loop of one load, or of four
 * independent loads), or grid-stride (neighbouring invocations on neighbouring vec4s). CPU rasterisers
 * and GPUs prefer opposite layouts, so the probe measures each. 'weights' is contiguous-x4 over the
 * device's weight store (kernels/runtime/weights.ts: a texture on llvmpipe), where the weight products
 * read from.
 */
export type StreamLayout = 'contiguous' | 'contiguous-x4' | 'grid-stride' | 'weights';
export const STREAM_LAYOUTS: readonly StreamLayout[] = ['contiguous', 'contiguous-x4', 'grid-stride', 'weights'];

const ENTRY: Record<StreamLayout, string> = { contiguous: 'contiguous', 'contiguous-x4': 'contiguous_x4', 'grid-stride': 'grid_stride', weights: 'weights_x4' };

/**
 * XOR of every vec4u of `src` into one u32 per invocation. Bindings: src (read, array<vec4u>),
 * out (write, one u32 per invocation). The XOR of `out` equals the XOR of all words of src.
 */
export class StreamReadProbe {
  readonly kernel: CompiledKernel;
  constructor(
    ctx: KernelContext,
    readonly layout: StreamLayout,
    readonly workgroupSize: number,
  ) {
    const weights = layout === 'weights';
    this.kernel = ctx.kernel({
      label: `probe-stream-${layout}`,
      code: wgsl(common, weights ? weightsSource : source),
      bindings: [weights ? 'weights' : 'read', 'write'],
      entryPoint: ENTRY[layout],
      constants: { WG: workgroupSize },
    });
  }

  /** `src`: a storage buffer, or for the 'weights' layout a weight store (createWeightStore). */
  bind(src: GPUBuffer | WeightStore, out: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([src, out]);
  }

  invocations(workgroups: number): number {
    return workgroups * this.workgroupSize;
  }

  /** Read `vec4s` vec4s of src with `workgroups` workgroups; out needs invocations(workgroups) words. */
  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { vec4s: number; workgroups: number }): void {
    const invocations = this.invocations(p.workgroups);
    const s = arena.slot();
    arena.u32[s] = p.vec4s;
    arena.u32[s + 1] = Math.ceil(p.vec4s / invocations);
    arena.u32[s + 2] = invocations;
    arena.dispatch(pass, this.kernel, group, s, p.workgroups);
  }
}

/** XOR of all words: what the probe's outputs XOR to when every word was read. */
export function xorWords(words: Uint32Array): number {
  let x = 0;
  for (let i = 0; i < words.length; i++) x ^= words[i];
  return x >>> 0;
}
