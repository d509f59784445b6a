import { ParamArena } from '../runtime/arena.ts';
import type { KernelContext } from '../runtime/context.ts';
import { LLVMPIPE_LOOP_BUDGET } from '../runtime/loop-budget.ts';
import { uploadWeights } from '../runtime/weights.ts';
import { readWords } from './readback.ts';
import { StreamReadProbe, xorWords, type StreamLayout } from './stream-read.ts';
import { bestOf, onePass, submitMs } from './timing.ts';
import { xorshift32 } from './xorshift.ts';

export interface StreamReadVariant {
  layout: StreamLayout;
  workgroupSize: number;
  workgroups: number;
  /** Dispatches per timed submit, each reading the whole buffer (more than one only where one is quick). */
  reps: number;
  /** Best time of one submit of `reps` dispatches. */
  ms: number;
  GBps: number;
}

export interface StreamReadOptions {
  /** Buffer size; rounded down to whole vec4s. */
  bytes: number;
  workgroups: number;
  workgroupSizes: readonly number[];
  layouts: readonly StreamLayout[];
  runs: number;
  /** Repeat the read in one submit until it takes this long, so a fast GPU is not timed on submit cost. */
  targetMs: number;
}

const MAX_REPS = 256;

/** Fill with xorshift32 so every word differs and a skipped load would change the checksum. */
function fillPattern(words: Uint32Array, seed: number): void {
  const next = xorshift32(seed);
  for (let i = 0; i < words.length; i++) words[i] = next();
}

/**
 * Streaming-read bandwidth of every layout and workgroup size. Each variant's output is checked against
 * the CPU's XOR of the same data before it is timed, so a figure is never reported for a read that
 * skipped part of the buffer.
 */
export async function measureStreamRead(ctx: KernelContext, o: StreamReadOptions): Promise<StreamReadVariant[]> {
  const device = ctx.device;
  const vec4s = Math.floor(o.bytes / 16);
  if (vec4s < 1) throw new Error(`stream-read probe: ${o.bytes} bytes is less than one vec4`);
  // Filled and checked in host memory, then written: on a GPU a mapped-at-creation range can be the
  // card's memory through the PCIe window, where every CPU read crawls (a 1 GiB probe did not finish in
  // 170 s on an H200).
  const words = new Uint32Array(vec4s * 4);
  fillPattern(words, 0x9e3779b9);
  const want = xorWords(words);
  const src = device.createBuffer({ label: 'probe-stream-src', size: vec4s * 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(src, 0, words);
  // The same words in the device's weight store, for the 'weights' layout.
  const store = o.layouts.includes('weights') ? uploadWeights(device, ctx.caps, 'probe-stream-weights', new Uint8Array(words.buffer)) : undefined;
  // Enough workgroups that no invocation loops more than llvmpipe allows, even at the smallest workgroup size.
  const workgroups = Math.max(o.workgroups, Math.ceil(vec4s / (LLVMPIPE_LOOP_BUDGET * Math.min(...o.workgroupSizes))));
  const maxInvocations = workgroups * Math.max(...o.workgroupSizes);
  const out = ctx.storage('probe-stream-out', maxInvocations * 4);
  const arena = new ParamArena(ctx, MAX_REPS);
  const variants: StreamReadVariant[] = [];
  try {
    for (const layout of o.layouts) {
      for (const workgroupSize of o.workgroupSizes) {
        const probe = new StreamReadProbe(ctx, layout, workgroupSize);
        const group = probe.bind(layout === 'weights' ? store! : src, out);
        const once = (reps: number) => {
          const commands = onePass(device, (pass) => {
            arena.reset();
            for (let r = 0; r < reps; r++) probe.encode(pass, arena, group, { vec4s, workgroups });
          });
          arena.flush();
          return submitMs(device, commands);
        };
        let reps = 1;
        const first = await once(reps); // compiles the pipeline and touches the buffer
        const got = xorWords(await readWords(device, out, probe.invocations(workgroups)));
        if (got !== want) {
          throw new Error(`stream-read probe ${layout}/${workgroupSize}: checksum ${hex(got)} is not the data's ${hex(want)}; the adapter skipped part of the buffer`);
        }
        for (let ms = Math.min(first, await once(reps)); ms < o.targetMs && reps < MAX_REPS; ms = await once(reps)) {
          reps = Math.min(MAX_REPS, reps * Math.min(16, Math.max(2, Math.ceil(o.targetMs / Math.max(ms, 0.01)))));
        }
        const ms = await bestOf(o.runs, () => once(reps));
        variants.push({ layout, workgroupSize, workgroups, reps, ms: round(ms, 3), GBps: round((reps * vec4s * 16) / (ms / 1000) / 1e9, 3) });
      }
    }
  } finally {
    src.destroy();
    store?.destroy();
    out.destroy();
    arena.buffer.destroy();
  }
  return variants;
}

function hex(x: number): string {
  return '0x' + x.toString(16).padStart(8, '0');
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
