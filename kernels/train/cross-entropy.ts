import source from './cross-entropy.wgsl?raw';
import workgroupSum from './workgroup-sum.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';

const WG = 64;

export interface CrossEntropyParams {
  tokens: number;
  vocab: number;
  /** 1 / counted positions of the whole batch: the gradient is that of the batch's mean loss. */
  invCount: number;
  /** Replace the logits by their gradient (training) or leave them (evaluation). */
  writeGrad: boolean;
  /** Row 0 of the logits is this row of targets, mask and loss (default 0). */
  rowOffset?: number;
}

/** Masked softmax cross-entropy. Bindings: logits (write), targets (read u32), mask (read f32), loss (write). */
export class CrossEntropyKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'train-cross-entropy', code: wgsl(source, workgroupSum), bindings: ['write', 'read', 'read', 'write'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: CrossEntropyParams): void {
    const s = arena.slot();
    arena.u32[s] = p.tokens;
    arena.u32[s + 1] = p.vocab;
    arena.f32[s + 2] = p.invCount;
    arena.u32[s + 3] = p.writeGrad ? 1 : 0;
    arena.u32[s + 4] = p.rowOffset ?? 0;
    const [gx, gy] = grid2d(p.tokens);
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
