import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';
import source from './empty.wgsl?raw';

/** One invocation writing out[index] = value: a dispatch that costs only what dispatching costs. Binding: out (write). */
export class EmptyProbe {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'probe-empty', code: source, bindings: ['write'] });
  }

  bind(out: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([out]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { index: number; value: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.index;
    arena.u32[s + 1] = p.value;
    arena.dispatch(pass, this.kernel, group, s, 1);
  }
}
