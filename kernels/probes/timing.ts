/**
 * Wall-clock timing of GPU work for the probes. Timestamp queries are missing on some adapters (llvmpipe
 * through OpenGL ES), so every probe is timed the same portable way: performance.now() around submit and
 * onSubmittedWorkDone, best of several runs (the machine may be busy; the best run is the adapter's own).
 */
import type { ParamArena } from '../runtime/arena.ts';

/** Milliseconds from submitting `commands` until the queue reports them done; the queue is drained first. */
export async function submitMs(device: GPUDevice, commands: GPUCommandBuffer): Promise<number> {
  // Earlier writeBuffer calls or work would otherwise be charged to this submit.
  await device.queue.onSubmittedWorkDone();
  const t0 = performance.now();
  device.queue.submit([commands]);
  await device.queue.onSubmittedWorkDone();
  return performance.now() - t0;
}

/** The smallest of `runs` measurements. */
export async function bestOf(runs: number, once: () => Promise<number>): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < Math.max(1, runs); i++) best = Math.min(best, await once());
  return best;
}

/** One compute pass recorded by `record`, finished into a command buffer (not yet submitted). */
export function onePass(device: GPUDevice, record: (pass: GPUComputePassEncoder) => void): GPUCommandBuffer {
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  record(pass);
  pass.end();
  return enc.finish();
}

/**
 * A probe's timed run: each call encodes one pass with the arena's slots reset (`record` takes them),
 * uploads its params and returns submitMs of it.
 */
export function arenaPass(device: GPUDevice, arena: ParamArena, record: (pass: GPUComputePassEncoder) => void): () => Promise<number> {
  return () => {
    const commands = onePass(device, (pass) => {
      arena.reset();
      record(pass);
    });
    arena.flush();
    return submitMs(device, commands);
  };
}

/** Runs `once` a first time (compiling its pipelines, touching every buffer); a validation error it raised is thrown, after `label`. */
export async function firstRun(device: GPUDevice, once: () => Promise<number>, label: string): Promise<void> {
  device.pushErrorScope('validation');
  await once();
  const error = await device.popErrorScope();
  if (error) throw new Error(`${label}: ${error.message}`);
}
