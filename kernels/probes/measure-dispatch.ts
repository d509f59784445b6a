import { ParamArena } from '../runtime/arena.ts';
import type { KernelContext } from '../runtime/context.ts';
import { EmptyProbe } from './empty.ts';
import { readWords } from './readback.ts';
import { bestOf, onePass, submitMs } from './timing.ts';

export interface DispatchCost {
  /** Microseconds per dispatch in one long pass, one submit: what each extra kernel of a step costs. */
  dispatchUs: number;
  /** Microseconds of one submit of one dispatch, a copy, and mapAsync of the result: a step's floor. */
  roundTripUs: number;
}

/**
 * Both costs use the same one-invocation kernel. Each dispatch gets its own parameter slot, as an
 * engine step's dispatches do, so the pass also pays for rebinding the dynamic offset.
 */
export async function measureDispatch(ctx: KernelContext, o: { dispatches: number; runs: number }): Promise<DispatchCost> {
  const device = ctx.device;
  const probe = new EmptyProbe(ctx);
  const out = ctx.storage('probe-empty-out', o.dispatches * 4);
  const group = probe.bind(out);
  const arena = new ParamArena(ctx, o.dispatches);
  const staging = device.createBuffer({ label: 'probe-roundtrip', size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    const long = () => {
      const commands = onePass(device, (pass) => {
        arena.reset();
        for (let i = 0; i < o.dispatches; i++) probe.encode(pass, arena, group, { index: i, value: i + 1 });
      });
      arena.flush();
      return submitMs(device, commands);
    };
    await long(); // compiles the pipeline
    const words = await readWords(device, out, o.dispatches);
    const missed = words.findIndex((w, i) => w !== i + 1);
    if (missed >= 0) throw new Error(`dispatch probe: dispatch ${missed} of ${o.dispatches} did not run`);
    const longMs = await bestOf(o.runs, long);

    const lone = async () => {
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      arena.reset();
      probe.encode(pass, arena, group, { index: 0, value: 1 });
      pass.end();
      enc.copyBufferToBuffer(out, 0, staging, 0, 4);
      const commands = enc.finish();
      arena.flush();
      await device.queue.onSubmittedWorkDone();
      const t0 = performance.now();
      device.queue.submit([commands]);
      await staging.mapAsync(GPUMapMode.READ);
      void new Uint32Array(staging.getMappedRange())[0]; // the result is on the CPU only once it is read
      staging.unmap();
      return performance.now() - t0;
    };
    await lone();
    // Lone submits are short and the machine noisy: more runs than the long probes.
    const loneMs = await bestOf(o.runs * 4, lone);
    return { dispatchUs: Math.round((longMs * 1000 * 100) / o.dispatches) / 100, roundTripUs: Math.round(loneMs * 1000 * 10) / 10 };
  } finally {
    out.destroy();
    staging.destroy();
    arena.buffer.destroy();
  }
}
