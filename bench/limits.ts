/**
 * `--limits`: what each adapter itself can do (kernels/probes/), so the engine's figures can be read as a
 * share of the adapter's ceiling rather than as bare tokens per second.
 */
import { ADAPTER_CHOICES, describeAdapter, NoAdapterError, type AdapterChoice, type SelectedDevice } from '../engine/gpu/select.ts';
import { adapterChoiceFromEnv, openNodeDevice } from '../engine/platform/node.ts';
import { matvecVariant } from '../kernels/matvec.ts';
import { defaultStreamBytes, measureAdapterLimits, type AdapterLimits, type ProbeOptions } from '../kernels/probes/limits.ts';
import { MATVEC_PATTERN, MATVEC_PROBE_TYPES, matvecShapes, measureMatVec, type MatVecRate } from '../kernels/probes/measure-matvec.ts';
import { measurePersistentProducts, type PersistentProducts } from '../kernels/probes/measure-persistent.ts';
import { dequantize } from '../engine/gguf/quant/index.ts';
import { tensorByteSize, typeName, type GgmlType } from '../ggml/types.ts';
import { KernelContext } from '../kernels/runtime/context.ts';

/** A decode kernel's weight streaming rate, as a share of the same adapter's streaming-read limit. */
export interface KernelStanding extends MatVecRate {
  percentOfRead: number;
}

export interface AdapterLimitsReport extends AdapterLimits {
  /** The adapter choice (swiftshader, llvmpipe, gpu), as the engine's measurement names its backend. */
  adapter: string;
  description: string;
  featureLevel: string;
  /** The engine's decode matrix-vector kernels on this adapter (the variant it picks), per weight type. */
  kernels: KernelStanding[];
  /**
   * llvmpipe with its compute threads pinned: a step's decode products one dispatch each against one
   * dispatch of persistent workgroups (kernels/probes/measure-persistent.ts).
   */
  persistent?: PersistentProducts;
}

/**
 * The persistent probe's products: a SmolLM2-135M decode step's, as the engine issues them (Q|K|V stacked,
 * O, gate|up stacked, down), 30 layers, each matrix its own weights.
 */
export const PERSISTENT_STEP = Array.from({ length: 30 }, () => [
  { n: 960, k: 576, copies: 1 },
  { n: 576, k: 576, copies: 1 },
  { n: 3072, k: 576, copies: 1 },
  { n: 576, k: 1536, copies: 1 },
]).flat();

export interface LimitsRun {
  measured: AdapterLimitsReport[];
  skipped: { adapter: string; reason: string }[];
}

/** One forced adapter, or every adapter a Node process can open when none (or auto) is given. */
export function limitsChoices(adapter: string | undefined): AdapterChoice[] {
  const forced = adapter !== undefined ? adapterChoiceFromEnv(adapter, '--adapter') : 'auto';
  if (forced !== 'auto') return [forced];
  return ADAPTER_CHOICES.filter((c) => c !== 'auto' && c !== 'browser');
}

/** Probe each adapter in turn on its own device, destroyed before the next opens. */
export async function measureLimits(choices: readonly AdapterChoice[], opts: ProbeOptions = {}, log: (line: string) => void = () => {}): Promise<LimitsRun> {
  const run: LimitsRun = { measured: [], skipped: [] };
  for (const choice of choices) {
    let sel;
    try {
      sel = await openNodeDevice(choice);
    } catch (e) {
      // The adapter's own reason, without the install advice meant for a machine with no adapter at all.
      const reason = e instanceof NoAdapterError ? e.skipped.map((s) => s.reason).join('; ') : (e as Error).message;
      run.skipped.push({ adapter: choice, reason });
      log(`limits: ${choice} skipped: ${reason}`);
      continue;
    }
    try {
      const limits = await measureAdapterLimits(sel.device, sel.caps, { ...opts, onProgress: (what) => log(`limits: ${sel.choice}: ${what}`) });
      const kernels: KernelStanding[] = [];
      for (const type of MATVEC_PROBE_TYPES) {
        log(`limits: ${sel.choice}: ${typeName(type)} matrix-vector kernel`);
        const measure = async (own: SelectedDevice) => {
          // The long product as large as the read probe's buffer (past a GPU's cache), within the binding limit.
          const longBytes = Math.min(defaultStreamBytes(own.caps), own.caps.maxStorageBinding, own.caps.maxBufferSize);
          return measureMatVec(new KernelContext(own.device, own.caps), type, matvecVariant(own.caps, type), matvecShapes(longBytes)(type), (k) => patternDot(type, k));
        };
        for (const r of await (sel.caps.software ? measure(sel) : onFreshDevice(choice, measure))) {
          kernels.push({ ...r, percentOfRead: (100 * r.GBps) / limits.streamReadGBps });
        }
      }
      // One persistent workgroup a compute thread needs the threads' count and each on its own CPU.
      const workers = sel.workerPinning?.pinned.length ?? 0;
      let persistent: PersistentProducts | undefined;
      if (sel.caps.orderedAtomics && workers > 0) {
        log(`limits: ${sel.choice}: decode products in one dispatch of ${workers} persistent workgroups`);
        persistent = await measurePersistentProducts(new KernelContext(sel.device, sel.caps), workers, PERSISTENT_STEP);
      }
      run.measured.push({ adapter: sel.choice, description: describeAdapter(sel.adapterInfo), featureLevel: sel.featureLevel, ...limits, kernels, ...(persistent ? { persistent } : {}) });
    } finally {
      sel.device.destroy();
    }
  }
  return run;
}

/**
 * `measure` on a device of its own, opened for it and destroyed after. Kernel timings on a GPU take one
 * each: an H200 streamed whichever product it measured first in a device up to 3x faster than every
 * later one (the same shape first and then second: 1.36 and 3.97 ms), so sharing a device made the
 * order the result.
 */
export async function onFreshDevice<T>(choice: AdapterChoice, measure: (own: SelectedDevice) => Promise<T>): Promise<T> {
  const own = await openNodeDevice(choice);
  try {
    return await measure(own);
  } finally {
    own.device.destroy();
  }
}

/** One row of the matrix-vector probe's pattern matrix dotted with its x, decoded on the CPU. */
export function patternDot(type: GgmlType, k: number): number {
  const row = new Uint8Array(tensorByteSize(type, k)).fill(MATVEC_PATTERN.byte);
  return dequantize(type, row, k).reduce((a, v) => a + v * MATVEC_PATTERN.x, 0);
}
