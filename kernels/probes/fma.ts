import type { ParamArena } from '../runtime/arena.ts';
import type { CompiledKernel, KernelContext } from '../runtime/context.ts';
import template from './fma.wgsl?raw';

/** Write every template line holding `$k` once per accumulator, with $k replaced by 0 .. n-1. */
export function expandAccumulators(wgslTemplate: string, n: number): string {
  return wgslTemplate
    .split('\n')
    .flatMap((line) => (line.includes('$k') ? Array.from({ length: n }, (_, k) => line.replaceAll('$k', String(k))) : [line]))
    .join('\n');
}

/**
 * What invocation `invocation` writes, computed on the CPU in f64 and rounded to f32 after each step: the
 * fused result. Equal to an unfused GPU's when a * m is exact in f32 (m a power of two, small values).
 */
export function fmaReference(invocation: number, accumulators: number, iters: number, m: number, c: number): number {
  const seed = invocation & 255;
  const f = Math.fround;
  const s = [0, 0, 0, 0];
  for (let k = 0; k < accumulators; k++) {
    const a = [seed + k, seed + 0.5, seed + 1, seed + 1.5].map(f);
    for (let i = 0; i < iters; i++) for (let l = 0; l < 4; l++) a[l] = f(a[l] * m + c);
    for (let l = 0; l < 4; l++) s[l] = f(s[l] + a[l]);
  }
  return f(f(f(s[0] + s[1]) + s[2]) + s[3]);
}

export interface FmaParams {
  iters: number;
  m: number;
  c: number;
  workgroups: number;
}

/**
 * `accumulators` independent vec4 chains a = fma(a, m, c), `iters` steps each, summed into one f32 per
 * invocation. Binding: out (write, one f32 per invocation). Few accumulators leave FMA latency exposed;
 * many may spill registers (a CPU rasteriser turns each vec4 into four SIMD registers), so several are tried.
 */
export class FmaProbe {
  readonly kernel: CompiledKernel;
  constructor(
    ctx: KernelContext,
    readonly accumulators: number,
    readonly workgroupSize: number,
  ) {
    if (!Number.isInteger(accumulators) || accumulators < 1 || accumulators > 32) throw new Error(`fma probe: ${accumulators} accumulators is outside 1..32`);
    this.kernel = ctx.kernel({ label: `probe-fma-${accumulators}`, code: expandAccumulators(template, accumulators), bindings: ['write'], constants: { WG: workgroupSize } });
  }

  bind(out: GPUBuffer): GPUBindGroup {
    return this.kernel.bind([out]);
  }

  invocations(workgroups: number): number {
    return workgroups * this.workgroupSize;
  }

  /** Floating-point operations of one dispatch: 2 per FMA lane. */
  flops(p: FmaParams): number {
    return this.invocations(p.workgroups) * p.iters * this.accumulators * 4 * 2;
  }

  encode(pass: GPUComputePassEncoder, arena: ParamArena, group: GPUBindGroup, p: FmaParams): void {
    const s = arena.slot();
    arena.u32[s] = p.iters;
    arena.f32[s + 1] = p.m;
    arena.f32[s + 2] = p.c;
    arena.dispatch(pass, this.kernel, group, s, p.workgroups);
  }
}
