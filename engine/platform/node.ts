/** Node entry to the device layer: Dawn's adapters, chosen by option or SVC_ADAPTER. */
import { ADAPTER_CHOICES, selectDevice, type AdapterChoice, type SelectedDevice } from '../gpu/select.ts';
import { nodeAdapterCandidates } from './node-gpu.ts';

/** Parse an adapter choice from an option or, by default, the SVC_ADAPTER environment variable. */
export function adapterChoiceFromEnv(value = process.env.SVC_ADAPTER, what = 'SVC_ADAPTER'): AdapterChoice {
  const v = (value ?? 'auto').trim().toLowerCase() || 'auto';
  if (!(ADAPTER_CHOICES as readonly string[]).includes(v) || v === 'browser') {
    throw new Error(`${what} "${value}" is not one of: auto, gpu, swiftshader, llvmpipe`);
  }
  return v as AdapterChoice;
}

export function openNodeDevice(choice: AdapterChoice = adapterChoiceFromEnv()): Promise<SelectedDevice> {
  return selectDevice(nodeAdapterCandidates(), choice);
}
