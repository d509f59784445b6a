/** Node entry to the device layer: Dawn's adapters, chosen by option or SVC_ADAPTER. */
import { ADAPTER_CHOICES, selectDevice, type AdapterChoice, type SelectedDevice } from '../gpu/select.ts';
import { nodeAdapterCandidates } from './node-gpu.ts';

export function adapterChoiceFromEnv(value = process.env.SVC_ADAPTER): AdapterChoice {
  const v = (value ?? 'auto').trim().toLowerCase() || 'auto';
  if (!(ADAPTER_CHOICES as readonly string[]).includes(v) || v === 'browser') {
    throw new Error(`SVC_ADAPTER="${value}" is not one of: auto, gpu, swiftshader, llvmpipe`);
  }
  return v as AdapterChoice;
}

export function openNodeDevice(choice: AdapterChoice = adapterChoiceFromEnv()): Promise<SelectedDevice> {
  return selectDevice(nodeAdapterCandidates(), choice);
}
