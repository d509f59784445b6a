import source from './sample.wgsl?raw';
import type { KernelContext } from '../runtime/context.ts';
import { RowSamplingKernel } from './row-kernel.ts';

/** Bytes per row of the per-row sampling settings buffer (struct SampleRow in common.wgsl). */
export const SAMPLE_ROW_BYTES = 16;
/** Words per row of the sample kernel's output: [token, logprob bits]. */
export const SAMPLE_OUT_WORDS = 2;
/** Token written when the mask allowed nothing. */
export const NO_TOKEN = 0xffffffff;

/** Write one row of sampling settings into a CPU mirror of the settings buffer. */
export function writeSampleRow(u32: Uint32Array, f32: Float32Array, row: number, s: { temperature: number; seed: number; counter: number; useMask: boolean }): void {
  const b = row * (SAMPLE_ROW_BYTES / 4);
  f32[b] = s.temperature;
  u32[b + 1] = s.seed >>> 0;
  u32[b + 2] = s.counter >>> 0;
  u32[b + 3] = s.useMask ? 1 : 0;
}

/**
 * One token per row, chosen on the GPU: argmax at temperature 0, Gumbel-max sampling otherwise.
 * Bindings: logits, mask, settings (read), out (write: [token, logprob] per row).
 */
export class SampleKernel extends RowSamplingKernel {
  constructor(ctx: KernelContext) {
    super(ctx, 'sample', source);
  }
}
