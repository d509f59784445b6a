import source from './penalties.wgsl?raw';
import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';

export const PENALTY_ENTRY_BYTES = 16;
export const PENALTY_ROW_BYTES = 32;

/** Write one penalty entry (a distinct previous token) into a CPU mirror of the entries buffer. */
export function writePenaltyEntry(u32: Uint32Array, index: number, token: number, generatedCount: number, inWindow: boolean): void {
  const b = index * (PENALTY_ENTRY_BYTES / 4);
  u32[b] = token;
  u32[b + 1] = generatedCount;
  u32[b + 2] = inWindow ? 1 : 0;
  u32[b + 3] = 0;
}

/** Write one row's penalty settings: entries [start, start+count) of the entries buffer. */
export function writePenaltyRow(u32: Uint32Array, f32: Float32Array, row: number, p: { start: number; count: number; presence: number; frequency: number; repetition: number }): void {
  const b = row * (PENALTY_ROW_BYTES / 4);
  u32[b] = p.start;
  u32[b + 1] = p.count;
  f32[b + 2] = p.presence;
  f32[b + 3] = p.frequency;
  f32[b + 4] = p.repetition;
}

/** Applies penalties in place. Bindings: logits (write), entries (read), rows (read). */
export class PenaltiesKernel {
  readonly kernel: CompiledKernel;
  constructor(ctx: KernelContext) {
    this.kernel = ctx.kernel({ label: 'penalties', code: source, bindings: ['write', 'read', 'read'] });
  }

  bind(logits: GPUBuffer, entries: GPUBuffer, rows: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([logits, entries, rows]);
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: { rows: number; logitsStride: number }): void {
    const s = arena.slot();
    arena.u32[s] = p.rows;
    arena.u32[s + 1] = p.logitsStride;
    arena.dispatch(pass, this.kernel, group, s, p.rows);
  }
}
