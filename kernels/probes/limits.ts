/**
 * What an adapter itself can do, measured with tiny WGSL probes: streaming-read bandwidth, f32 FMA
 * throughput and the cost of a dispatch and of a submit round trip. The engine's own figures (weight
 * GB/s in decode, GFLOP/s in prefill) mean something only next to these.
 */
import type { GpuCaps } from '../runtime/caps.ts';
import { KernelContext } from '../runtime/context.ts';
import { measureDispatch } from './measure-dispatch.ts';
import { measureFma, type FmaVariant } from './measure-fma.ts';
import { measureStreamRead, type StreamReadVariant } from './measure-stream.ts';
import { STREAM_LAYOUTS, type StreamLayout } from './stream-read.ts';

export type { FmaVariant } from './measure-fma.ts';
export type { StreamReadVariant } from './measure-stream.ts';

/** Plain JSON: every figure is the best of several runs. */
export interface AdapterLimits {
  /** Best streaming read over all layouts and workgroup sizes, GB/s (1e9 bytes per second). */
  streamReadGBps: number;
  streamReadBest: { layout: StreamLayout; workgroupSize: number };
  streamReadBytes: number;
  streamReadVariants: StreamReadVariant[];
  /** Best f32 FMA throughput, GFLOP/s (2 flops per FMA lane). */
  fmaGflops: number;
  fmaBest: { accumulators: number; workgroupSize: number };
  fmaVariants: FmaVariant[];
  /** Microseconds per dispatch of a one-invocation kernel in one long pass. */
  dispatchUs: number;
  dispatchesPerPass: number;
  /** Microseconds of one lone submit and mapAsync of its result. */
  roundTripUs: number;
  runs: number;
}

export interface ProbeOptions {
  /**
   * Streaming-read buffer size (default 96 MiB on a CPU adapter, 1 GiB on a GPU, whose last-level cache
   * can hold 50+ MiB; capped by the device's binding and buffer limits).
   */
  streamBytes?: number;
  /** Workgroups per dispatch for the read and FMA probes (default 256 on a CPU adapter, 4096 on a GPU). */
  workgroups?: number;
  /** Candidate workgroup sizes; those above the device's limits are dropped (default 32, 64, 128, 256). */
  workgroupSizes?: readonly number[];
  layouts?: readonly StreamLayout[];
  /** Independent vec4 accumulators per FMA invocation (default 4 and 8). */
  accumulators?: readonly number[];
  /** Timed runs per variant; the best counts (default 5). */
  runs?: number;
  /** Dispatches in the long pass (default 2000). */
  dispatches?: number;
  /** Length a timed read or FMA submit is grown to, so submit cost stays small beside it (default 40 ms). */
  targetMs?: number;
  /** Called before each probe, for progress lines. */
  onProgress?: (what: string) => void;
}

export const DEFAULT_STREAM_BYTES = 96 * 2 ** 20;
export const GPU_STREAM_BYTES = 2 ** 30;

/** The streaming-read size for this device when the caller names none. */
export function defaultStreamBytes(caps: GpuCaps): number {
  return caps.software ? DEFAULT_STREAM_BYTES : GPU_STREAM_BYTES;
}

/** The candidate sizes this device can run, in order. */
export function probeWorkgroupSizes(caps: GpuCaps, wanted: readonly number[] = [32, 64, 128, 256]): number[] {
  const sizes = wanted.filter((s) => s <= caps.maxInvocationsPerWorkgroup && s <= caps.maxWorkgroupSizeX);
  if (sizes.length === 0) throw new Error(`no probe workgroup size fits this device (at most ${caps.maxInvocationsPerWorkgroup} invocations)`);
  return sizes;
}

export async function measureAdapterLimits(device: GPUDevice, caps: GpuCaps, opts: ProbeOptions = {}): Promise<AdapterLimits> {
  const ctx = new KernelContext(device, caps);
  const runs = opts.runs ?? 5;
  // A CPU rasteriser has a few threads to feed; a GPU needs many resident invocations to hide latency.
  const workgroups = opts.workgroups ?? (caps.software ? 256 : 4096);
  const targetMs = opts.targetMs ?? 40;
  const workgroupSizes = probeWorkgroupSizes(caps, opts.workgroupSizes);
  const maxBytes = Math.min(caps.maxStorageBinding, caps.maxBufferSize);
  const streamBytes = Math.floor(Math.min(opts.streamBytes ?? defaultStreamBytes(caps), maxBytes) / 16) * 16;
  const progress = opts.onProgress ?? (() => {});

  progress(`streaming read of ${(streamBytes / 2 ** 20).toFixed(1)} MiB`);
  const stream = await measureStreamRead(ctx, { bytes: streamBytes, workgroups, workgroupSizes, layouts: opts.layouts ?? STREAM_LAYOUTS, runs, targetMs });
  progress('f32 FMA throughput');
  const fma = await measureFma(ctx, { workgroups, workgroupSizes, accumulators: opts.accumulators ?? [4, 8], runs, targetMs });
  progress('dispatch and round-trip cost');
  const dispatchesPerPass = opts.dispatches ?? 2000;
  const cost = await measureDispatch(ctx, { dispatches: dispatchesPerPass, runs });

  const bestStream = best(stream, (v) => v.GBps);
  const bestFma = best(fma, (v) => v.gflops);
  return {
    streamReadGBps: bestStream.GBps,
    streamReadBest: { layout: bestStream.layout, workgroupSize: bestStream.workgroupSize },
    streamReadBytes: streamBytes,
    streamReadVariants: stream,
    fmaGflops: bestFma.gflops,
    fmaBest: { accumulators: bestFma.accumulators, workgroupSize: bestFma.workgroupSize },
    fmaVariants: fma,
    dispatchUs: cost.dispatchUs,
    dispatchesPerPass,
    roundTripUs: cost.roundTripUs,
    runs,
  };
}

function best<T>(xs: T[], key: (x: T) => number): T {
  return xs.reduce((a, b) => (key(b) > key(a) ? b : a));
}
