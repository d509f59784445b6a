/** Buffers in and out of the training kernels' tests. */
import type { KernelContext } from '../../../kernels/runtime/context.ts';
import { readF32 } from '../../helpers/gpu.ts';

export function f32(ctx: KernelContext, values: ArrayLike<number>, label = 'test'): GPUBuffer {
  return ctx.storage(label, Math.max(1, values.length) * 4, Float32Array.from(values));
}

export function u32(ctx: KernelContext, values: ArrayLike<number>, label = 'test'): GPUBuffer {
  return ctx.storage(label, Math.max(1, values.length) * 4, Uint32Array.from(values));
}

export function zeros(ctx: KernelContext, n: number, label = 'test'): GPUBuffer {
  return ctx.storage(label, Math.max(1, n) * 4);
}

export async function read(ctx: KernelContext, b: GPUBuffer, n: number): Promise<Float64Array> {
  return Float64Array.from(await readF32(ctx, b, n));
}

/** Largest |a − b| / max(1, |b|). */
export function relError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i]));
    worst = Number.isNaN(e) ? Infinity : Math.max(worst, e);
  }
  return worst;
}
