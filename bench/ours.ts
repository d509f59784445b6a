/** Measure our WebGPU engine: prefill and decode speed, time to first token, GPU memory, dispatches. */
import type { WebGpuEngine } from '../engine/engine.ts';
import { compileGrammar, GrammarInputError } from '../engine/grammar/index.ts';
import { loadEngine } from '../engine/node.ts';
import type { TokenConstraint } from '../engine/types.ts';
import { readModelConfig } from '../engine/arch/index.ts';
import { parseGguf } from '../engine/gguf/parse.ts';
import { FileSource } from '../engine/loader/file-source.ts';
import { curveMaxTokens, curvePoint, curvePrompt, medianPoint, timeSequences, type CurvePoint, type EngineCurve } from './curve.ts';
import { measureAlone, median, medianTimings, type BenchSpec, type EngineRuns, type Measurement } from './measure.ts';

export function measureOurs(spec: BenchSpec, adapter: string | undefined): Promise<Measurement> {
  return measureAlone(openOurs(spec, adapter), spec.runs);
}

/** Our engine loaded and warmed up on `spec` (EngineRuns). */
export async function openOurs(spec: BenchSpec, adapter: string | undefined): Promise<EngineRuns> {
  const t0 = performance.now();
  // Prefix cache off: every run repeats the same prompt, and a cached prompt would time no prefill at all
  // (llama.cpp's runs each start from an empty sequence).
  const engine = await loadEngine({ model: spec.model, adapter, contextLength: spec.prompt.length + spec.genTokens + 8, maxSequences: Math.max(1, spec.concurrency), prefixCache: false });
  const loadMs = performance.now() - t0;
  const prompt = spec.prompt;
  const run = async (maxTokens: number) => {
    const gen = engine.generate({ tokens: prompt, maxTokens, temperature: 0, stopAtEndOfGeneration: false });
    for await (const _ of gen);
    return gen.result;
  };
  await run(4); // warm-up: pipelines compiled, caches touched
  let dispatches = 0;
  // The step counters summed over the timed runs: among them how long the device sat without work per
  // step (host scheduling and encoding before the first submit, readback and bookkeeping after it: what
  // pipelined decode would hide), and the host's encoding and wait for samples.
  const timed: StepCounters = { ...NO_STEPS };
  return {
    async once() {
      const { counters, result: r } = await countSteps(engine, () => run(spec.genTokens));
      addSteps(timed, counters);
      dispatches = engine.stats().lastStepDispatches;
      return { prefillTokensPerSecond: r.timings.prefillTokensPerSecond, decodeTokensPerSecond: r.timings.decodeTokensPerSecond, timeToFirstTokenMs: r.timings.timeToFirstTokenMs };
    },
    async finish(runs) {
      // As many runs of the prompt alone, so the per-step figures are the decode steps' (perStep).
      const prompts: StepCounters = { ...NO_STEPS };
      for (let i = 0; i < runs.length; i++) addSteps(prompts, (await countSteps(engine, () => run(1))).counters);
      const perStepIdle = perStep(prompts, timed);
      const pipelining = await measurePipelining(engine, () => run(spec.genTokens), () => run(1));
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
        ...medianTimings(runs),
        gpuMemoryBytes: st.weightsBytes + st.kvCacheBytes + st.workspaceBytes,
        dispatchesPerToken: dispatches,
        // kvCacheF16: the engine's KV cache held half-precision values (kernels/kv-format.ts), 1 or 0.
        extra: { ...perStepIdle, ...pipelining, ...constrained, ...batched, kvCacheF16: st.kvFormat === 'f16' ? 1 : 0 },
      };
    },
  };
}

/**
 * Decode with pipelined decode off and on (EngineOptions.pipelinedDecode), whatever the engine's default
 * here: wall time and device idle time per step (the gap between steps the pipeline is for: encoding,
 * readback and scheduling), and decode speed, two runs each.
 */
async function measurePipelining(engine: WebGpuEngine, run: () => Promise<{ timings: { decodeTokensPerSecond: number } }>, promptOnly: () => Promise<unknown>): Promise<Record<string, number>> {
  const byDefault = engine.pipelinedDecode;
  const out: Record<string, number> = { pipelinedByDefault: byDefault ? 1 : 0 };
  try {
    // Two runs of the prompt alone, subtracted from each pair of whole runs: per decode step.
    const prompts = (await countSteps(engine, async () => (await promptOnly(), await promptOnly()))).counters;
    for (const [name, on] of [['unpipelined', false], ['pipelined', true]] as const) {
      engine.setPipelinedDecode(on);
      const { counters, result: speeds } = await countSteps(engine, async () => [(await run()).timings.decodeTokensPerSecond, (await run()).timings.decodeTokensPerSecond]);
      const { msPerStep, deviceIdleMsPerStep, hostMsPerStep, submitMsPerStep, waitMsPerStep } = perStep(prompts, counters);
      out[`${name}MsPerStep`] = round(msPerStep);
      out[`${name}IdleMsPerStep`] = round(deviceIdleMsPerStep);
      out[`${name}HostMsPerStep`] = round(hostMsPerStep);
      out[`${name}SubmitMsPerStep`] = round(submitMsPerStep);
      out[`${name}WaitMsPerStep`] = round(waitMsPerStep);
      out[`${name}DecodeTokensPerSecond`] = round(median(speeds));
    }
  } finally {
    engine.setPipelinedDecode(byDefault);
  }
  return out;
}

type StepCounters = ReturnType<WebGpuEngine['stats']>['steps'];
const NO_STEPS: StepCounters = { count: 0, ms: 0, deviceIdleMs: 0, pipelined: 0, hostMs: 0, submitMs: 0, waitMs: 0 };

/** The engine's step counters over `fn` (nothing else may run on the engine meanwhile), and its result. */
export async function countSteps<R>(engine: WebGpuEngine, fn: () => Promise<R>): Promise<{ counters: StepCounters; result: R }> {
  const before = engine.stats().steps;
  const result = await fn();
  const after = engine.stats().steps;
  const counters = { ...NO_STEPS };
  for (const k of Object.keys(counters) as (keyof StepCounters)[]) counters[k] = after[k] - before[k];
  return { counters, result };
}

function addSteps(sum: StepCounters, more: StepCounters): void {
  for (const k of Object.keys(sum) as (keyof StepCounters)[]) sum[k] += more[k];
}

/**
 * Per step between two readings of the engine's step counters: wall time, device idle time, the host's
 * encoding, its submit calls, and its waiting for the samples (the rest is scheduling and bookkeeping).
 * For the decode steps alone, `before` is the counters of the same requests run to their first token
 * only: a prompt's step (80 ms for a 1B model's 512 tokens on an H200) averaged into 64 decode steps
 * read as a decode loop 1.2 ms a step slower than it is.
 */
export function perStep(before: StepCounters, after: StepCounters): { msPerStep: number; deviceIdleMsPerStep: number; hostMsPerStep: number; submitMsPerStep: number; waitMsPerStep: number } {
  const steps = Math.max(1, after.count - before.count);
  return {
    msPerStep: (after.ms - before.ms) / steps,
    deviceIdleMsPerStep: (after.deviceIdleMs - before.deviceIdleMs) / steps,
    hostMsPerStep: (after.hostMs - before.hostMs) / steps,
    submitMsPerStep: (after.submitMs - before.submitMs) / steps,
    waitMsPerStep: (after.waitMs - before.waitMs) / steps,
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

/**
 * The batching curve (bench/curve.ts): for each n in `sequences`, n different prompts at once, prefill and
 * decode timed apart. A fresh engine with a slot and KV pages for every sequence of the largest n, so no
 * request waits for admission.
 */
export async function measureOursCurve(spec: BenchSpec, sequences: readonly number[], adapter: string | undefined): Promise<EngineCurve> {
  const maxN = Math.max(...sequences);
  const P = spec.prompt.length;
  const contextLength = P + curveMaxTokens(maxN, P, spec.genTokens) + 8;
  // Prefix cache off: the points repeat the same n prompts, so later points would find them cached.
  const engine = await loadEngine({ model: spec.model, adapter, contextLength, maxSequences: maxN, kvCacheBytes: await kvCacheBytesFor(spec.model, contextLength, maxN), prefixCache: false });
  try {
    const point = async (n: number, prompt: readonly number[], decodeTokens: number) => {
      const done: Promise<unknown>[] = [];
      const { t0, stamps } = await timeSequences(n, decodeTokens, (i) => {
        const abort = new AbortController();
        const gen = engine.generate({ tokens: curvePrompt(prompt, i), maxTokens: curveMaxTokens(n, prompt.length, decodeTokens), temperature: 0, stopAtEndOfGeneration: false, signal: abort.signal });
        done.push(gen.result.catch(() => undefined));
        return { tokens: (async function* () { for await (const c of gen) yield c.tokens.length; })(), stop: () => abort.abort() };
      });
      await Promise.all(done); // aborted sequences leave at the next step: the engine is idle again
      return curvePoint(prompt.length, t0, stamps);
    };
    // Warm-up at every batch size: pipelines compiled and buffers touched for n rows.
    for (const n of sequences) await point(n, spec.prompt.slice(0, Math.min(8, P)), 2);
    const points: CurvePoint[] = [];
    for (const n of sequences) {
      const runs: CurvePoint[] = [];
      for (let r = 0; r < spec.runs; r++) runs.push(await point(n, spec.prompt, spec.genTokens));
      points.push(medianPoint(runs));
      process.stderr.write(`bench: svc curve ${n} sequences: prefill ${points.at(-1)!.prefillTokensPerSecond.toFixed(1)} tok/s, decode ${points.at(-1)!.decodeTokensPerSecond.toFixed(1)} tok/s\n`);
    }
    return { engine: 'svc (WebGPU)', backend: engine.stats().adapter, points };
  } finally {
    await engine.dispose();
  }
}

/** KV cache bytes for `sequences` slots of `contextLength` positions (f32 K and V, 16-position pages), at least the engine's default. */
async function kvCacheBytesFor(model: string, contextLength: number, sequences: number): Promise<number> {
  const source = new FileSource(model);
  try {
    const gguf = await parseGguf(source);
    const cfg = readModelConfig(gguf.metadata, new Set(gguf.tensors.map((t) => t.name)));
    const pageBytes = 16 * cfg.nKvHeads * cfg.headDim * 4;
    return Math.max(512 * 2 ** 20, 2 * cfg.nLayers * pageBytes * Math.ceil(contextLength / 16) * sequences);
  } finally {
    await source.close();
  }
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
