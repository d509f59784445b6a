/**
 * Where a step's time goes, kernel by kernel: the dispatches of one recorded step (ParamArena.recorder)
 * are issued again and timed. With timestamp queries (real GPUs) every dispatch gets its own pass whose
 * start and end the GPU stamps; without them (llvmpipe) the dispatches of each kernel label are issued
 * together in one submit and timed with the wall clock. Either way the figures are medians of several
 * rounds, and the whole step is timed too (alone, and as one of several submitted together), so the
 * parts can be read against it.
 *
 * Replaying re-runs the step on the same buffers: in-place updates (the residual stream) accumulate and
 * the KV cache rows of the step are written again. Profile an engine whose sequences are finished and
 * whose prefix cache is off, and do not trust its outputs afterwards.
 */
import type { DispatchRecord, ParamArena } from './arena.ts';
import type { KernelContext } from './context.ts';

export interface KernelTime {
  label: string;
  dispatches: number;
  /** Median milliseconds of all this label's dispatches of the step together. */
  ms: number;
}

export interface StepProfile {
  method: 'timestamps' | 'wall-clock';
  dispatches: number;
  /** The whole step issued as one pass and submit, median wall-clock milliseconds. */
  stepMs: number;
  /**
   * A step's share of QUEUED_STEPS copies of it submitted together (median): the GPU never waits for
   * the host between them, so against stepMs it shows what one submit's start and completion cost.
   */
  queuedStepMs: number;
  /**
   * A step's share of LOOP_STEPS steps run as the decode loop runs them (median of rounds): each encoded
   * afresh with a 16-byte copy into one of three mappable buffers (in turn) and submitted, then the step before it
   * read back with mapAsync (`inFlight` 2: submitted ahead of that read, as pipelined decode; 1: read
   * before the next is encoded). Against the engine's own loop it separates what WebGPU's submit/map
   * cycle costs from what the engine adds per step.
   */
  loopStepMs: { inFlight: number; ms: number }[];
  /** Per kernel label, most time first. */
  kernels: KernelTime[];
}

const ROUNDS = 5;
/** WebGPU's limit on queries in a query set. */
const MAX_QUERIES = 4096;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const QUEUED_STEPS = 8;

/** An encoder holding one pass of `records` replayed (the caller may add to it, then finish it). */
function encodeReplay(device: GPUDevice, arena: ParamArena, records: readonly DispatchRecord[], label: string): GPUCommandEncoder {
  const enc = device.createCommandEncoder({ label });
  const pass = enc.beginComputePass();
  for (const d of records) arena.replay(pass, d);
  pass.end();
  return enc;
}

/** Median wall-clock milliseconds of `copies` passes of `records` in one submit, divided by `copies`. */
async function wallClock(ctx: KernelContext, arena: ParamArena, records: readonly DispatchRecord[], copies = 1, prepare?: () => void): Promise<number> {
  const device = ctx.device;
  const ms: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const buffers = Array.from({ length: copies }, () => encodeReplay(device, arena, records, 'profile').finish());
    prepare?.();
    await device.queue.onSubmittedWorkDone();
    const t0 = performance.now();
    device.queue.submit(buffers);
    await device.queue.onSubmittedWorkDone();
    ms.push((performance.now() - t0) / copies);
  }
  return median(ms);
}

const LOOP_STEPS = 16;

async function loopClock(ctx: KernelContext, arena: ParamArena, records: readonly DispatchRecord[], inFlight: number, prepare?: () => void): Promise<number> {
  const device = ctx.device;
  const src = device.createBuffer({ label: 'profile.loop.src', size: 16, usage: GPUBufferUsage.COPY_SRC });
  const reads = [0, 1, 2].map((i) => device.createBuffer({ label: `profile.loop.read${i}`, size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
  const ms: number[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      await device.queue.onSubmittedWorkDone();
      const pending: GPUBuffer[] = [];
      const readOldest = async () => {
        const b = pending.shift()!;
        await b.mapAsync(GPUMapMode.READ);
        b.unmap();
      };
      const t0 = performance.now();
      for (let i = 0; i < LOOP_STEPS; i++) {
        const enc = encodeReplay(device, arena, records, 'profile.loop');
        prepare?.();
        const read = reads[i % reads.length];
        enc.copyBufferToBuffer(src, 0, read, 0, 16);
        device.queue.submit([enc.finish()]);
        pending.push(read);
        if (pending.length >= inFlight) await readOldest();
      }
      while (pending.length > 0) await readOldest();
      ms.push((performance.now() - t0) / LOOP_STEPS);
    }
  } finally {
    src.destroy();
    for (const b of reads) b.destroy();
  }
  return median(ms);
}

/** Nanoseconds of each dispatch, one stamped pass each, median over the rounds. */
async function stamped(ctx: KernelContext, arena: ParamArena, records: readonly DispatchRecord[], prepare?: () => void): Promise<number[]> {
  const device = ctx.device;
  const n = records.length;
  const querySet = device.createQuerySet({ type: 'timestamp', count: 2 * n });
  const resolved = device.createBuffer({ label: 'profile.stamps', size: 16 * n, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({ label: 'profile.stamps.read', size: 16 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const rounds: number[][] = records.map(() => []);
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const enc = device.createCommandEncoder({ label: 'profile' });
      records.forEach((d, i) => {
        const pass = enc.beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } });
        arena.replay(pass, d);
        pass.end();
      });
      enc.resolveQuerySet(querySet, 0, 2 * n, resolved, 0);
      enc.copyBufferToBuffer(resolved, 0, read, 0, 16 * n);
      prepare?.();
      device.queue.submit([enc.finish()]);
      await read.mapAsync(GPUMapMode.READ);
      const t = new BigUint64Array(read.getMappedRange().slice(0));
      read.unmap();
      for (let i = 0; i < n; i++) rounds[i].push(Number(t[2 * i + 1] - t[2 * i]));
    }
  } finally {
    querySet.destroy();
    resolved.destroy();
    read.destroy();
  }
  return rounds.map(median);
}

/**
 * Time `records` (one step's dispatches, the arena's params still theirs), per kernel label. `prepare`
 * runs before each submit of a replay: what the step's own upload resets (the FFN chains' barrier counts,
 * engine/model/layer-chains.ts). Copies of a step submitted together share one reset.
 */
export async function profileStep(ctx: KernelContext, arena: ParamArena, records: readonly DispatchRecord[], prepare?: () => void): Promise<StepProfile> {
  if (records.length === 0) throw new Error('profile: no dispatches were recorded');
  const stepMs = await wallClock(ctx, arena, records, 1, prepare);
  const queuedStepMs = await wallClock(ctx, arena, records, QUEUED_STEPS, prepare);
  const loopStepMs = [];
  for (const inFlight of [1, 2]) loopStepMs.push({ inFlight, ms: await loopClock(ctx, arena, records, inFlight, prepare) });
  const byLabel = new Map<string, DispatchRecord[]>();
  for (const d of records) byLabel.set(d.label, [...(byLabel.get(d.label) ?? []), d]);
  const kernels: KernelTime[] = [];
  const method = ctx.caps.timestamps && 2 * records.length <= MAX_QUERIES ? 'timestamps' : 'wall-clock';
  if (method === 'timestamps') {
    const ns = await stamped(ctx, arena, records, prepare);
    const sum = new Map<string, number>();
    records.forEach((d, i) => sum.set(d.label, (sum.get(d.label) ?? 0) + ns[i]));
    for (const [label, ds] of byLabel) kernels.push({ label, dispatches: ds.length, ms: sum.get(label)! / 1e6 });
  } else {
    for (const [label, ds] of byLabel) kernels.push({ label, dispatches: ds.length, ms: await wallClock(ctx, arena, ds, 1, prepare) });
  }
  kernels.sort((a, b) => b.ms - a.ms);
  return { method, dispatches: records.length, stepMs, queuedStepMs, loopStepMs, kernels };
}
