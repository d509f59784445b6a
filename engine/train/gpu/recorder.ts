/**
 * Recording training work: compute dispatches in passes broken only where a buffer copy must sit between
 * them, with bind groups made once per set of buffers and reused every step.
 */
import type { ParamArena } from '../../../kernels/runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../../../kernels/runtime/context.ts';

export class BindCache {
  private readonly ids = new WeakMap<GPUBuffer, number>();
  private readonly groups = new Map<string, GPUBindGroup>();
  private next = 1;

  bind(kernel: CompiledKernel, buffers: readonly GPUBuffer[]): GPUBindGroup {
    const key = kernel.label + ':' + buffers.map((b) => this.id(b)).join(',');
    let g = this.groups.get(key);
    if (!g) this.groups.set(key, (g = kernel.bind(buffers)));
    return g;
  }

  private id(b: GPUBuffer): number {
    let i = this.ids.get(b);
    if (i === undefined) this.ids.set(b, (i = this.next++));
    return i;
  }
}

/**
 * Records a micro-batch's dispatches as a few command buffers, cut at `boundary()` (between layers), so
 * the trainer can submit them one at a time and let inference steps in between. All of them share one
 * parameter arena, uploaded once by `finish()` before the first is submitted.
 */
export class Recorder {
  private encoder: GPUCommandEncoder;
  private open: GPUComputePassEncoder | undefined;
  private readonly done: GPUCommandBuffer[] = [];

  constructor(
    private readonly ctx: KernelContext,
    readonly arena: ParamArena,
  ) {
    arena.reset();
    this.encoder = ctx.device.createCommandEncoder({ label: 'train' });
  }

  get pass(): GPUComputePassEncoder {
    this.open ??= this.encoder.beginComputePass({ label: 'train' });
    return this.open;
  }

  copy(src: GPUBuffer, dst: GPUBuffer, bytes: number): void {
    this.endPass();
    this.encoder.copyBufferToBuffer(src, 0, dst, 0, bytes);
  }

  clear(buffer: GPUBuffer): void {
    this.endPass();
    this.encoder.clearBuffer(buffer);
  }

  /** A point where the work may be split between submits. */
  boundary(): void {
    this.endPass();
    this.done.push(this.encoder.finish());
    this.encoder = this.ctx.device.createCommandEncoder({ label: 'train' });
  }

  /** Uploads the dispatches' parameters; returns the command buffers to submit, in order. */
  finish(): GPUCommandBuffer[] {
    this.endPass();
    this.done.push(this.encoder.finish());
    this.arena.flush();
    return this.done;
  }

  private endPass(): void {
    this.open?.end();
    this.open = undefined;
  }
}
