/**
 * `--profile`: where our engine's prefill and decode steps spend their time, kernel by kernel
 * (WebGpuEngine.profileLastStep, kernels/runtime/step-profile.ts): GPU timestamps per dispatch where the
 * adapter has them, else each kernel's dispatches timed together with the wall clock. Its own engine,
 * prefix cache off, disposed afterwards (replaying a step leaves the engine's buffers altered).
 */
import { loadEngine } from '../engine/node.ts';
import type { StepProfile } from '../kernels/runtime/step-profile.ts';
import type { BenchSpec } from './measure.ts';

export interface BenchProfile {
  adapter: string;
  prefill: StepProfile & { tokens: number };
  decode: StepProfile & { position: number };
}

export async function profileOurs(spec: BenchSpec, adapter: string | undefined): Promise<BenchProfile> {
  const decodeTokens = Math.min(8, spec.genTokens);
  const engine = await loadEngine({ model: spec.model, adapter, contextLength: spec.prompt.length + decodeTokens + 8, prefixCache: false });
  try {
    const run = { tokens: spec.prompt, temperature: 0, stopAtEndOfGeneration: false } as const;
    await engine.generate({ ...run, maxTokens: 2 }).result; // pipelines compiled, caches touched
    const prefill = await engine.profileLastStep({ ...run, maxTokens: 1 });
    const decode = await engine.profileLastStep({ ...run, maxTokens: decodeTokens });
    return { adapter: engine.stats().adapter, prefill: { ...prefill, tokens: spec.prompt.length }, decode: { ...decode, position: spec.prompt.length + decodeTokens - 1 } };
  } finally {
    await engine.dispose();
  }
}

function table(title: string, p: StepProfile): string {
  const total = p.kernels.reduce((a, k) => a + k.ms, 0);
  const rows = p.kernels.map((k) => `| ${k.label} | ${k.dispatches} | ${k.ms.toFixed(3)} | ${((100 * k.ms) / total).toFixed(1)} |`);
  return [
    `${title}: ${p.dispatches} dispatches, the step ${p.stepMs.toFixed(2)} ms as one submit (${p.queuedStepMs.toFixed(2)} ms each of several submitted together; ${p.loopStepMs.map((l) => `${l.ms.toFixed(2)} ms looped with ${l.inFlight} in flight`).join(', ')}), the kernels ${total.toFixed(2)} ms (${p.method})`,
    '| kernel | dispatches | ms | % |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
}

export function formatProfile(p: BenchProfile): string {
  return [table(`Profile on ${p.adapter}, prefill of ${p.prefill.tokens} tokens`, p.prefill), '', table(`Decode step at position ${p.decode.position}`, p.decode)].join('\n');
}
