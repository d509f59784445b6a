/**
 * A pipeline that fails to build does nothing when dispatched, so a model would "run" and produce
 * garbage: KernelContext.checkKernels() (awaited by engine load and warm-up) turns such failures into an
 * error naming the kernel and the WGSL compiler's words.
 */
import { describe, expect, it } from 'vitest';
import source from '../../kernels/probes/empty.wgsl?raw';
import { testContext } from '../helpers/gpu.ts';

const ctx = await testContext();

describe('KernelContext.checkKernels', () => {
  it('passes when every kernel built, and names each one that did not', async () => {
    ctx.kernel({ label: 'check-good', code: source, bindings: ['write'] });
    await expect(ctx.checkKernels()).resolves.toBeUndefined();

    ctx.kernel({ label: 'check-bad-wgsl', code: source.replace('params.value', 'params.missing'), bindings: ['write'] });
    ctx.kernel({ label: 'check-good-2', code: source.replace('params.value', 'params.value + 1u'), bindings: ['write'] });
    ctx.kernel({ label: 'check-bad-entry', code: source, bindings: ['write'], entryPoint: 'nowhere' });
    const failure = ctx.checkKernels();
    await expect(failure).rejects.toThrow(/2 kernel\(s\) failed to build on this device/);
    await expect(failure).rejects.toThrow(/check-bad-wgsl: .*missing/);
    await expect(failure).rejects.toThrow(/check-bad-entry: /);
    // Reported once: later kernels are checked on their own.
    await expect(ctx.checkKernels()).resolves.toBeUndefined();
  });
});
