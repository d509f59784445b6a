/**
 * Records one submit's worth of training work: compute dispatches in one pass, broken only where a buffer
 * copy must sit between them, with bind groups made once per set of buffers and reused every step.
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

export class Recorder {
  readonly encoder: GPUCommandEncoder;
  private open: GPUComputePassEncoder | undefined;

  constructor(
    private readonly ctx: KernelContext,
    readonly arena: ParamArena,
  ) {
    arena.reset();
    this.encoder = ctx.device.createCommandEncoder({ label: 'train-step' });
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

  /** Uploads the dispatches' parameters and submits everything recorded. */
  submit(): void {
    this.endPass();
    this.arena.flush();
    this.ctx.device.queue.submit([this.encoder.finish()]);
  }

  private endPass(): void {
    this.open?.end();
    this.open = undefined;
  }
}
