import { ParamArena } from '../runtime/arena.ts';
import type { KernelContext } from '../runtime/context.ts';
import { FmaProbe, fmaReference } from './fma.ts';
import { LLVMPIPE_LOOP_BUDGET } from '../runtime/loop-budget.ts';
import { readWords } from './readback.ts';
import { bestOf, onePass, submitMs } from './timing.ts';

export interface FmaVariant {
  accumulators: number;
  workgroupSize: number;
  /** Grown with `iters` until one dispatch takes about the target time. */
  workgroups: number;
  iters: number;
  ms: number;
  gflops: number;
}

export interface FmaOptions {
  /** Workgroups to start from; more are added once `iters` reaches its cap. */
  workgroups: number;
  workgroupSizes: readonly number[];
  accumulators: readonly number[];
  runs: number;
  /** Grow the work until one dispatch takes at least this long, so submit cost is negligible. */
  targetMs: number;
}

// a = fma(a, 1, 1) counts: the result tells how many steps really ran, and stays an exact f32 integer
// (plus a half) within the iteration cap. m and c arrive through the uniform, so nothing folds.
const M = 1;
const C = 1;
const MAX_WORKGROUPS = 16384;

/** f32 FMA throughput of every accumulator count and workgroup size, each checked against the CPU. */
export async function measureFma(ctx: KernelContext, o: FmaOptions): Promise<FmaVariant[]> {
  const device = ctx.device;
  const arena = new ParamArena(ctx, 1);
  let out: GPUBuffer | undefined;
  const variants: FmaVariant[] = [];
  try {
    for (const accumulators of o.accumulators) {
      for (const workgroupSize of o.workgroupSizes) {
        const probe = new FmaProbe(ctx, accumulators, workgroupSize);
        const outFor = (workgroups: number) => {
          const bytes = probe.invocations(workgroups) * 4;
          if (!out || out.size < bytes) {
            out?.destroy();
            out = ctx.storage('probe-fma-out', bytes);
          }
          return out;
        };
        const once = (iters: number, workgroups: number) => {
          const group = probe.bind(outFor(workgroups));
          const commands = onePass(device, (pass) => {
            arena.reset();
            probe.encode(pass, arena, group, { iters, m: M, c: C, workgroups });
          });
          arena.flush();
          return submitMs(device, commands);
        };
        let iters = 16;
        let workgroups = o.workgroups;
        await once(iters, workgroups); // compiles the pipeline
        for (;;) {
          const ms = await once(iters, workgroups);
          if (ms >= o.targetMs) break;
          const grow = Math.min(64, Math.max(2, Math.ceil(o.targetMs / Math.max(ms, 0.01))));
          if (iters < LLVMPIPE_LOOP_BUDGET) iters = Math.min(LLVMPIPE_LOOP_BUDGET, iters * grow);
          else if (workgroups < MAX_WORKGROUPS) workgroups = Math.min(MAX_WORKGROUPS, workgroups * grow);
          else break;
        }
        const ms = await bestOf(o.runs, () => once(iters, workgroups));
        await checkOutput(device, out!, probe.invocations(workgroups), accumulators, iters, `${accumulators}/${workgroupSize}`);
        const flops = probe.flops({ iters, m: M, c: C, workgroups });
        variants.push({ accumulators, workgroupSize, workgroups, iters, ms: Math.round(ms * 1000) / 1000, gflops: Math.round((flops / (ms / 1000) / 1e9) * 1000) / 1000 });
      }
    }
  } finally {
    out?.destroy();
    arena.buffer.destroy();
  }
  return variants;
}

/** The first and last invocations against the CPU: a loop the adapter cut short would show here. */
async function checkOutput(device: GPUDevice, out: GPUBuffer, invocations: number, accumulators: number, iters: number, variant: string): Promise<void> {
  const got = new Float32Array((await readWords(device, out, invocations)).buffer);
  for (const i of [0, invocations - 1]) {
    const want = fmaReference(i, accumulators, iters, M, C);
    if (got[i] !== want) throw new Error(`fma probe ${variant}: invocation ${i} wrote ${got[i]}, the CPU computes ${want} after ${iters} steps; the adapter did not run every step`);
  }
}
