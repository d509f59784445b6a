import source from './rmsnorm.wgsl?raw';
import serial from './rmsnorm-serial.wgsl?raw';
import type { ParamArena } from './runtime/arena.ts';
import type { CompiledKernel, KernelContext } from './runtime/context.ts';
import { grid2d } from './runtime/grid.ts';

const SERIAL_WG = 16;

/** RMSNorm of `rows` rows of length `dim`: buffers x (read), weight (read), y (write). */
export class RmsNormKernel {
  readonly kernel: CompiledKernel;
  /** One invocation per row without barriers, for CPU adapters; else a workgroup per row. */
  readonly serial: boolean;
  constructor(ctx: KernelContext, variant: 'serial' | 'workgroup' = ctx.caps.software ? 'serial' : 'workgroup') {
    this.serial = variant === 'serial';
    this.kernel = this.serial
      ? ctx.kernel({ label: 'rmsnorm-serial', code: serial, bindings: ['read', 'read', 'write'], constants: { WG: SERIAL_WG } })
      : ctx.kernel({ label: 'rmsnorm', code: source, bindings: ['read', 'read', 'write'], constants: { WG: 64 } });
  }

  bind(x: GPUBuffer, weight: GPUBuffer, y: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([x, weight, y]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; dim: number; eps: number; xOffset?: number; yOffset?: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.dim;
    arena.f32[s + 2] = p.eps;
    arena.u32[s + 3] = p.xOffset ?? 0;
    arena.u32[s + 4] = p.yOffset ?? 0;
    const [gx, gy] = grid2d(this.serial ? Math.ceil(p.rows / SERIAL_WG) : p.rows);
    arena.dispatch(pass, this.kernel, group, s, gx, gy);
  }
}
