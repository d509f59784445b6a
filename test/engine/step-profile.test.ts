/**
 * WebGpuEngine.profileLastStep (kernels/runtime/step-profile.ts): a step's dispatches recorded as the
 * engine issued them and timed again per kernel, with GPU timestamps where the adapter has them
 * (SwiftShader) and the wall clock where not (llvmpipe). Structure only: how fast is the bench's
 * business.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { loadEngine } from '../../engine/node.ts';
import { sharedModel } from '../helpers/models.ts';

const engines: WebGpuEngine[] = [];
afterAll(async () => {
  for (const e of engines) await e.dispose();
});

async function engine(adapter: string, prefixCache = false): Promise<WebGpuEngine> {
  const e = await loadEngine({ model: sharedModel('TinyStories-656K-Q8_0.gguf'), adapter, contextLength: 256, prefixCache });
  engines.push(e);
  return e;
}

describe.each([
  ['llvmpipe', 'wall-clock'],
  ['swiftshader', 'timestamps'],
] as const)('step profile on %s', (adapter, method) => {
  it(`times every dispatch of a decode step and of a prefill step by kernel (${method})`, async () => {
    const e = await engine(adapter);
    const tokens = e.tokenizer.encode('Once upon a time, there was a little girl named Lily. She');
    const run = { tokens, temperature: 0, stopAtEndOfGeneration: false } as const;
    await e.generate({ ...run, maxTokens: 6 }).result;
    const decodeDispatches = e.stats().lastStepDispatches;

    const decode = await e.profileLastStep({ ...run, maxTokens: 6 });
    expect(decode.method).toBe(method);
    expect(decode.dispatches).toBe(decodeDispatches);
    expect(decode.kernels.reduce((a, k) => a + k.dispatches, 0)).toBe(decode.dispatches);
    expect(decode.kernels.some((k) => k.label.startsWith('attention'))).toBe(true);
    expect(decode.kernels.some((k) => k.label.startsWith('matmul'))).toBe(false);
    for (const k of decode.kernels) expect(k.ms).toBeGreaterThanOrEqual(0);
    expect(decode.stepMs).toBeGreaterThan(0);
    expect(decode.queuedStepMs).toBeGreaterThan(0);
    expect(decode.loopStepMs.map((l) => l.inFlight)).toEqual([1, 2]);
    for (const l of decode.loopStepMs) expect(l.ms).toBeGreaterThan(0);
    // Most time first.
    expect(decode.kernels.map((k) => k.ms)).toEqual([...decode.kernels.map((k) => k.ms)].sort((a, b) => b - a));

    // maxTokens 1: the last step is the prompt's, whose products are the tiled (multi-token) kernels.
    const prefill = await e.profileLastStep({ ...run, maxTokens: 1 });
    expect(prefill.kernels.some((k) => k.label.startsWith('matmul'))).toBe(true);
    expect(prefill.kernels.reduce((a, k) => a + k.dispatches, 0)).toBe(prefill.dispatches);
    // Attention over one sequence's prompt takes two tokens an invocation (AttentionParams.tokenPairs); a
    // decode step's single token does not.
    expect(prefill.kernels.some((k) => k.label.startsWith('attention-serial-pair-'))).toBe(true);
    expect(decode.kernels.some((k) => k.label.startsWith('attention-serial-pair-'))).toBe(false);
  });
});

describe('step profile refusals', () => {
  it('needs the prefix cache off, since replaying a step rewrites KV rows it may share', async () => {
    const e = await engine('llvmpipe', true);
    await expect(e.profileLastStep({ tokens: e.tokenizer.encode('Once upon a time'), maxTokens: 2, temperature: 0 })).rejects.toThrow(/prefixCache: false/);
  });
});
