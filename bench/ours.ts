/** Measure our WebGPU engine: prefill and decode speed, time to first token, GPU memory, dispatches. */
import { loadEngine } from '../engine/node.ts';
import { median, type BenchSpec, type Measurement } from './measure.ts';

export async function measureOurs(spec: BenchSpec, adapter: string | undefined): Promise<Measurement> {
  const t0 = performance.now();
  const engine = await loadEngine({ model: spec.model, adapter, contextLength: spec.prompt.length + spec.genTokens + 8, maxSequences: 1 });
  const loadMs = performance.now() - t0;
  const prompt = spec.prompt;
  const run = async (maxTokens: number) => {
    const gen = engine.generate({ tokens: prompt, maxTokens, temperature: 0, stopAtEndOfGeneration: false });
    for await (const _ of gen);
    return gen.result;
  };
  await run(4); // warm-up: pipelines compiled, caches touched
  const prefill: number[] = [];
  const decode: number[] = [];
  const ttft: number[] = [];
  let dispatches = 0;
  for (let i = 0; i < spec.runs; i++) {
    const r = await run(spec.genTokens);
    prefill.push(r.timings.prefillTokensPerSecond);
    decode.push(r.timings.decodeTokensPerSecond);
    ttft.push(r.timings.timeToFirstTokenMs);
    dispatches = engine.stats().lastStepDispatches;
  }
  const st = engine.stats();
  await engine.dispose();
  return {
    engine: 'svc (WebGPU)',
    backend: st.adapter,
    promptTokens: prompt.length,
    generatedTokens: spec.genTokens,
    loadMs,
    prefillTokensPerSecond: median(prefill),
    decodeTokensPerSecond: median(decode),
    timeToFirstTokenMs: median(ttft),
    gpuMemoryBytes: st.weightsBytes + st.kvCacheBytes + st.workspaceBytes,
    dispatchesPerToken: dispatches,
  };
}
