/**
 * The kernel warmer's child process (kernel-warmer.ts): opens llvmpipe as the parent did, dispatches each
 * kernel it is sent once so that Mesa compiles it into its on-disk cache, answers, and exits.
 */
import type { GpuCaps } from '../../kernels/runtime/caps.ts';
import { KernelContext, type KernelSpec } from '../../kernels/runtime/context.ts';
import { dispatchEachOnce } from '../../kernels/runtime/dispatch-once.ts';
import { selectDevice } from '../gpu/select.ts';
import { nodeAdapterCandidates } from './node-gpu.ts';

/** The parent's kernels, and its device's caps: the WGSL KernelContext writes depends on them. */
export interface WarmRequest {
  specs: KernelSpec[];
  caps: GpuCaps;
}

export type WarmResult = { ok: true } | { error: string };

async function warm(request: WarmRequest): Promise<WarmResult> {
  try {
    const selected = await selectDevice(nodeAdapterCandidates(), 'llvmpipe');
    await dispatchEachOnce(new KernelContext(selected.device, request.caps), request.specs);
    selected.device.destroy();
    // Mesa writes cache entries from a queue thread of its own, which exiting at once could cut short.
    await new Promise((r) => setTimeout(r, 250));
    return { ok: true };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

if (process.send) {
  process.once('message', (request: WarmRequest) => {
    void warm(request).then((result) => process.send!(result, () => process.exit(0)));
  });
}
