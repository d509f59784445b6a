/**
 * `--limits`: what each adapter itself can do (kernels/probes/), so the engine's figures can be read as a
 * share of the adapter's ceiling rather than as bare tokens per second.
 */
import { ADAPTER_CHOICES, describeAdapter, NoAdapterError, type AdapterChoice } from '../engine/gpu/select.ts';
import { adapterChoiceFromEnv, openNodeDevice } from '../engine/platform/node.ts';
import { measureAdapterLimits, type AdapterLimits, type ProbeOptions } from '../kernels/probes/limits.ts';

export interface AdapterLimitsReport extends AdapterLimits {
  /** The adapter choice (swiftshader, llvmpipe, gpu), as the engine's measurement names its backend. */
  adapter: string;
  description: string;
  featureLevel: string;
}

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
      run.measured.push({ adapter: sel.choice, description: describeAdapter(sel.adapterInfo), featureLevel: sel.featureLevel, ...limits });
    } finally {
      sel.device.destroy();
    }
  }
  return run;
}
