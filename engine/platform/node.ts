/** Node entry to the device layer: Dawn's adapters, chosen by option or SVC_ADAPTER. */
import { ADAPTER_CHOICES, selectDevice, type AdapterChoice, type SelectedDevice } from '../gpu/select.ts';
import { llvmpipeKernelWarmer, mesaShaderCacheEnabled } from './kernel-warmer.ts';
import { nodeAdapterCandidates } from './node-gpu.ts';
import { pinComputeWorkers } from './worker-pinning.ts';

/** Parse an adapter choice from an option or, by default, the SVC_ADAPTER environment variable. */
export function adapterChoiceFromEnv(value = process.env.SVC_ADAPTER, what = 'SVC_ADAPTER'): AdapterChoice {
  const v = (value ?? 'auto').trim().toLowerCase() || 'auto';
  if (!(ADAPTER_CHOICES as readonly string[]).includes(v) || v === 'browser') {
    throw new Error(`${what} "${value}" is not one of: auto, gpu, swiftshader, llvmpipe`);
  }
  return v as AdapterChoice;
}

/**
 * The chosen adapter's device; on llvmpipe, its compute workers each pinned to a CPU (worker-pinning.ts),
 * and kernels compiled off this thread where Mesa's shader cache is on (kernel-warmer.ts).
 */
export async function openNodeDevice(choice: AdapterChoice = adapterChoiceFromEnv()): Promise<SelectedDevice> {
  const selected = await selectDevice(nodeAdapterCandidates(), choice);
  if (selected.choice === 'llvmpipe') {
    selected.workerPinning = await pinComputeWorkers(selected.device, selected.caps);
    if (mesaShaderCacheEnabled()) selected.warmKernels = llvmpipeKernelWarmer();
  }
  return selected;
}
