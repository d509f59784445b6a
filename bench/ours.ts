/** Measure our WebGPU engine: prefill and decode speed, time to first token, GPU memory, dispatches. */
import type { WebGpuEngine } from '../engine/engine.ts';
import { compileGrammar, GrammarInputError } from '../engine/grammar/index.ts';
import { loadEngine } from '../engine/node.ts';
import type { TokenConstraint } from '../engine/types.ts';
import { median, type BenchSpec, type Measurement } from './measure.ts';

export async function measureOurs(spec: BenchSpec, adapter: string | undefined): Promise<Measurement> {
  const t0 = performance.now();
  const engine = await loadEngine({ model: spec.model, adapter, contextLength: spec.prompt.length + spec.genTokens + 8, maxSequences: Math.max(1, spec.concurrency) });
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
  const constrained = await measureConstrained(engine, prompt, spec.genTokens);
  const batched = spec.concurrency > 1 ? await measureConcurrent(engine, prompt, spec.genTokens, spec.concurrency) : {};
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
    extra: { ...constrained, ...batched },
  };
}

/** Aggregate decode throughput of `n` sequences generating at once (continuous batching). */
async function measureConcurrent(engine: WebGpuEngine, prompt: number[], genTokens: number, n: number): Promise<Record<string, number>> {
  const run = () =>
    Promise.all(Array.from({ length: n }, (_, i) => engine.generate({ tokens: prompt, maxTokens: genTokens, temperature: 0.8, seed: i + 1, stopAtEndOfGeneration: false }).result));
  await run();
  const t0 = performance.now();
  const results = await run();
  const seconds = (performance.now() - t0) / 1000;
  const tokens = results.reduce((sum, r) => sum + r.completionTokens, 0);
  return { concurrentSequences: n, concurrentTokensPerSecond: round(tokens / seconds) };
}

const BENCH_SCHEMA = {
  type: 'object',
  properties: { title: { type: 'string' }, rating: { type: 'integer', minimum: 1, maximum: 5 }, tags: { type: 'array', items: { type: 'string' } } },
  required: ['title', 'rating', 'tags'],
};

/**
 * Constrained decoding's cost: a JSON-schema generation with the grammar's mask and accept timed
 * inside the engine's own loop, and how many tokens jump-forward appended without sampling.
 */
async function measureConstrained(engine: WebGpuEngine, prompt: number[], genTokens: number): Promise<Record<string, number | string>> {
  let grammar;
  try {
    grammar = await compileGrammar(engine.tokenizer, { type: 'json_schema', schema: BENCH_SCHEMA });
  } catch (e) {
    // Some vocabularies cannot write JSON at all (TinyStories-656K has no "{").
    if (e instanceof GrammarInputError) return { constrainedDecoding: `n/a: ${e.message}` };
    throw e;
  }
  let grammarMs = 0;
  let steps = 0;
  const timed = (c: TokenConstraint): TokenConstraint => ({
    mask() {
      const t = performance.now();
      const m = c.mask();
      grammarMs += performance.now() - t;
      steps++;
      return m;
    },
    accept(token) {
      const t = performance.now();
      c.accept(token);
      grammarMs += performance.now() - t;
    },
    isDone: () => c.isDone(),
    forcedTokens: (limit) => c.forcedTokens?.(limit) ?? [],
    dispose: () => c.dispose?.(),
  });
  const maxTokens = Math.max(genTokens, 64);
  // Warm-up: the first constrained run touches paths the unconstrained runs did not.
  await engine.generate({ tokens: prompt, maxTokens, temperature: 0.8, seed: 2, constraint: await grammar.createConstraint({ maxTokens }) }).result;
  const constraint = timed(await grammar.createConstraint({ maxTokens }));
  const r = await engine.generate({ tokens: prompt, maxTokens, temperature: 0.8, seed: 1, constraint }).result;
  return {
    grammarCompileMs: round(grammar.compileMs),
    constrainedTokens: r.completionTokens,
    constrainedDecodeTokensPerSecond: round(r.completionTokens > 1 ? ((r.completionTokens - 1) / r.timings.decodeMs) * 1000 : 0),
    grammarMsPerSampledToken: round(steps > 0 ? grammarMs / steps : 0),
    jumpForwardShare: round(r.completionTokens > 0 ? r.forcedTokens / r.completionTokens : 0),
  };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
