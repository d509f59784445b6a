import source from './dequantize.wgsl?raw';
import type { GgmlType } from '../../ggml/types.ts';
import { deviceLayout } from '../quant/layouts.ts';
import type { ParamArena } from '../runtime/arena.ts';
import { wgsl, type CompiledKernel, type KernelContext } from '../runtime/context.ts';
import { grid2d } from '../runtime/grid.ts';

const WG = 64;

/** Packed weight rows (the engine's GPU layout of `type`) to f32 rows. Bindings: w (read), out (write). */
export class DequantizeKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext, type: GgmlType) {
    this.kernel = ctx.kernel({ label: `train-dequantize-${type}`, code: wgsl(source, deviceLayout(ctx.caps, type).wgsl), bindings: ['weights', 'write'], constants: { WG } });
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; cols: number; srcRow: number; dstRow: number }): void {
    const s = arena.slot();
    arena.u32.set([p.rows, p.cols, p.srcRow, p.dstRow], s);
    const [gx, gy] = grid2d(Math.ceil((p.rows * p.cols) / WG));
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
