/**
 * llvmpipe's loop limiter. Mesa's gallivm (lp_bld_ir_common.c) gives each invocation, that is each SIMD
 * vector of invocations, one counter: set to 65535 (LP_MAX_TGSI_LOOP_ITERATIONS) when the shader starts
 * and decremented at the end of every pass through every loop, nested or one after another (a loop of n
 * iterations costs n + 1: the pass in which its lanes leave reaches the end too). Once it reaches zero every loop exits at its next test, and the shader goes on with partial results, without an
 * error. Splitting a long loop into nested loops therefore does not help; only fewer iterations do.
 * Loops NIR unrolls before that (a constant trip count of at most 32, in the measurements of
 * test/kernels/loop-budget.test.ts) are not counted, nor are lines a wrapper writes out (kernels/unroll.ts).
 * SwiftShader and GPUs set no such limit (GpuCaps.loopBudget: Infinity).
 */
import type { GpuCaps } from './caps.ts';

export const LLVMPIPE_LOOP_BUDGET = 65535;

/**
 * Throws, naming what needed them, when `iterations` (a kernel's worst case for one invocation, every
 * loop counted) exceed the adapter's budget: on llvmpipe such a kernel would silently compute a wrong
 * result.
 */
export function checkLoopBudget(caps: GpuCaps, what: string, iterations: number): void {
  if (iterations > caps.loopBudget) {
    throw new Error(`${what} needs ${iterations} loop iterations in one shader invocation; this adapter (llvmpipe) stops every shader after ${caps.loopBudget}, all loops together`);
  }
}
