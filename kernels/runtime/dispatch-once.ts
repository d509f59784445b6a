/**
 * Each kernel dispatched once, one workgroup, on placeholder buffers and zeroed parameters: what a kernel
 * warmer runs so that a CPU rasteriser compiles the kernels (llvmpipe compiles a pipeline's machine code
 * at its first dispatch, not when it is made) and keeps them in its on-disk shader cache. The results
 * are meaningless; with every parameter 0 a kernel's loops run no iterations, and reads and writes past
 * a placeholder's end are clamped by WebGPU's robust access.
 */
import { KernelContext, type BindingKind, type BindingResource, type KernelSpec } from './context.ts';
import { ParamArena } from './arena.ts';
import { texelTexture } from './weights.ts';

/** Bytes of each placeholder storage buffer: room for a kernel's fixed-size arrays, small enough to be free. */
const PLACEHOLDER_BYTES = 1 << 16;

/**
 * Makes, binds and dispatches every spec once, in order, and waits for the device. Rejects naming the
 * kernels that failed to build (KernelContext.checkKernels).
 */
export async function dispatchEachOnce(ctx: KernelContext, specs: readonly KernelSpec[]): Promise<void> {
  const made: (GPUBuffer | GPUTexture)[] = [];
  const placeholder = (kind: BindingKind): BindingResource => {
    const r =
      kind === 'texture' || (kind === 'weights' && ctx.caps.weightTextures)
        ? texelTexture(ctx.device, 'placeholder', 1)
        : kind === 'uniform'
        ? ctx.device.createBuffer({ label: 'placeholder', size: ctx.caps.maxUniformBinding, usage: GPUBufferUsage.UNIFORM })
        : ctx.storage('placeholder', PLACEHOLDER_BYTES);
    made.push(r);
    return r;
  };
  const arena = new ParamArena(ctx, Math.max(1, specs.length));
  try {
    const encoder = ctx.device.createCommandEncoder({ label: 'dispatch-each-once' });
    const pass = encoder.beginComputePass();
    for (const spec of specs) {
      const kernel = ctx.kernel(spec);
      arena.dispatch(pass, kernel, kernel.bind(spec.bindings.map(placeholder)), arena.slot(), 1);
    }
    pass.end();
    arena.flush();
    await ctx.checkKernels();
    ctx.device.queue.submit([encoder.finish()]);
    await ctx.device.queue.onSubmittedWorkDone();
  } finally {
    arena.buffer.destroy();
    for (const r of made) r.destroy();
  }
}
