/** A sampling kernel with one workgroup per row of logits (top-K): bindings logits, mask, settings, out. */
import common from './common.wgsl?raw';
import maskTest from './mask.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';
import { checkLoopBudget } from '../runtime/loop-budget.ts';

export interface RowSamplingParams {
  rows: number;
  vocab: number;
  logitsStride: number;
  maskWords: number;
}

/** One workgroup per row of logits. Bindings: logits, mask, settings (read), out (write). */
export class RowSamplingKernel {
  readonly kernel: CompiledKernel;
  /**
   * `vocabWalks`: how many times an invocation loops over its share of the vocabulary (every
   * workgroupSize-th entry), which on llvmpipe must fit GpuCaps.loopBudget (runtime/loop-budget.ts).
   */
  constructor(
    private readonly ctx: KernelContext,
    label: string,
    source: string,
    private readonly workgroupSize: number,
    private readonly vocabWalks: number,
    constants?: Record<string, number>,
  ) {
    this.kernel = ctx.kernel({ label, code: wgsl(common, maskTest, source), bindings: ['read', 'read', 'read', 'write'], constants });
  }

  bind(logits: GPUBuffer, mask: GPUBuffer, settings: GPUBuffer, out: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([logits, mask, settings, out]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: RowSamplingParams): void {
    checkLoopBudget(this.ctx.caps, `${this.kernel.label} over a vocabulary of ${p.vocab}`, this.vocabWalks * (Math.ceil(p.vocab / this.workgroupSize) + 1) + 64);
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.vocab;
    arena.u32[s + 2] = p.logitsStride;
    arena.u32[s + 3] = p.maskWords;
    arena.u32[s + 4] = 0;
    arena.dispatch(pass, this.kernel, group, s, p.rows);
  }
}
