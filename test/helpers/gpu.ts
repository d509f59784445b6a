/** Kernel tests run on whatever adapter the device layer picks here (SVC_ADAPTER forces one). */
import { openNodeDevice } from '../../engine/platform/node.ts';
import { ParamArena } from '../../kernels/runtime/arena.ts';
import { KernelContext } from '../../kernels/runtime/context.ts';

let shared: Promise<KernelContext> | undefined;

export function testContext(): Promise<KernelContext> {
  shared ??= openNodeDevice().then((sel) => {
    sel.device.addEventListener('uncapturederror', (e) => {
      // Surface validation errors in the test that caused them instead of silently reading zeros.
      lastError = (e as GPUUncapturedErrorEvent).error.message;
    });
    return new KernelContext(sel.device, sel.caps);
  });
  return shared;
}

let lastError: string | undefined;

/** Encode one compute pass with `record`, submit it and fail on any validation error. */
export async function runPass(ctx: KernelContext, record: (pass: GPUComputePassEncoder, arena: ParamArena) => void, arenaSlots = 64): Promise<void> {
  await submitChecked(ctx, arenaSlots, (enc, arena) => {
    const pass = enc.beginComputePass();
    record(pass, arena);
    pass.end();
  });
}

/**
 * runPass for a step whose kernels may copy between their dispatches (ParamArena.beginStep, as the
 * engine's steps are encoded): `record` gets the step's first pass, which a copy may end.
 */
export async function runStep(ctx: KernelContext, record: (pass: GPUComputePassEncoder, arena: ParamArena) => void, arenaSlots = 64): Promise<void> {
  await submitChecked(ctx, arenaSlots, (enc, arena) => {
    record(arena.beginStep(enc, 'test-step'), arena);
    arena.endStep();
  });
}

/** Encode with a fresh arena, submit, wait, and fail on any validation or uncaptured GPU error. */
async function submitChecked(ctx: KernelContext, arenaSlots: number, encode: (enc: GPUCommandEncoder, arena: ParamArena) => void): Promise<void> {
  const arena = new ParamArena(ctx, arenaSlots);
  ctx.device.pushErrorScope('validation');
  const enc = ctx.device.createCommandEncoder();
  encode(enc, arena);
  arena.flush();
  ctx.device.queue.submit([enc.finish()]);
  const err = await ctx.device.popErrorScope();
  await ctx.device.queue.onSubmittedWorkDone();
  arena.buffer.destroy();
  if (err) throw new Error(`GPU validation error: ${err.message}`);
  if (lastError) {
    const msg = lastError;
    lastError = undefined;
    throw new Error(`GPU error: ${msg}`);
  }
}

/** From now on, push the label of every kernel `arena` dispatches onto `labels`. */
export function recordLabels(arena: ParamArena, labels: string[]): void {
  const dispatch = arena.dispatch.bind(arena);
  arena.dispatch = (pass, kernel, ...rest) => {
    labels.push(kernel.label);
    dispatch(pass, kernel, ...rest);
  };
}

export async function readBuffer(ctx: KernelContext, src: GPUBuffer, byteLength = src.size, offset = 0): Promise<ArrayBuffer> {
  const staging = ctx.device.createBuffer({ size: byteLength, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = ctx.device.createCommandEncoder();
  enc.copyBufferToBuffer(src, offset, staging, 0, byteLength);
  ctx.device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = staging.getMappedRange().slice(0);
  staging.unmap();
  staging.destroy();
  return out;
}

export async function readF32(ctx: KernelContext, src: GPUBuffer, count: number, offset = 0): Promise<Float32Array> {
  return new Float32Array(await readBuffer(ctx, src, count * 4, offset * 4));
}

export async function readU32(ctx: KernelContext, src: GPUBuffer, count: number, offset = 0): Promise<Uint32Array> {
  return new Uint32Array(await readBuffer(ctx, src, count * 4, offset * 4));
}
