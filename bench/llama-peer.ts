/** Measure llama.cpp (node-llama-cpp's prebuilt binaries) on the same file and the same token ids. */
import type { LlamaContext } from 'node-llama-cpp';
import { curveMaxTokens, curvePoint, curvePrompt, medianPoint, timeSequences, type CurvePoint, type EngineCurve } from './curve.ts';
import { medianTimings, type BenchSpec, type EngineRuns, type Measurement } from './measure.ts';

/** llama.cpp loaded and warmed up on `spec` (EngineRuns). */
export async function openLlamaCpp(spec: BenchSpec, opts: { gpu: false | 'cuda' | 'vulkan' | 'auto'; threads: number }): Promise<EngineRuns> {
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: opts.gpu, build: 'never', logLevel: 'error' as never });
  const t0 = performance.now();
  const model = await llama.loadModel({ modelPath: spec.model, gpuLayers: opts.gpu === false ? 0 : 'max' });
  const prompt = spec.prompt;
  const n = Math.max(1, spec.concurrency);
  const context = await model.createContext({ threads: opts.threads, contextSize: n * (prompt.length + spec.genTokens + 8), batchSize: Math.max(512, prompt.length), sequences: n });
  const loadMs = performance.now() - t0;
  const once = async () => {
    const seq = context.getSequence();
    const start = performance.now();
    let first = 0;
    let count = 0;
    // Prefill and decode timed as llama.cpp's own example does: the first token ends prefill.
    for await (const _ of seq.evaluate(prompt as never, { temperature: 0 })) {
      count++;
      if (count === 1) first = performance.now();
      if (count >= spec.genTokens) break;
    }
    const end = performance.now();
    seq.dispose();
    return { prefillTokensPerSecond: (prompt.length / (first - start)) * 1000, decodeTokensPerSecond: ((count - 1) / (end - first)) * 1000, timeToFirstTokenMs: first - start };
  };
  await once(); // warm-up
  return {
    once,
    async finish(runs) {
      const extra = n > 1 ? await concurrent(context, prompt, spec.genTokens, n) : undefined;
      await context.dispose();
      await model.dispose();
      return {
        engine: 'llama.cpp (node-llama-cpp)',
        backend: backendName(llama.gpu, opts),
        promptTokens: prompt.length,
        generatedTokens: spec.genTokens,
        loadMs,
        ...medianTimings(runs),
        extra,
      };
    },
  };
}

/** Aggregate throughput of `n` sequences of one context generating at once (llama.cpp batches them). */
async function concurrent(context: LlamaContext, prompt: number[], genTokens: number, n: number): Promise<Record<string, number>> {
  const one = async () => {
    const seq = context.getSequence();
    let count = 0;
    for await (const _ of seq.evaluate(prompt as never, { temperature: 0.8 })) if (++count >= genTokens) break;
    seq.dispose();
    return count;
  };
  const t0 = performance.now();
  const counts = await Promise.all(Array.from({ length: n }, one));
  const seconds = (performance.now() - t0) / 1000;
  return { concurrentSequences: n, concurrentTokensPerSecond: Math.round((counts.reduce((a, b) => a + b, 0) / seconds) * 1000) / 1000 };
}

function backendName(gpu: string | false, opts: { gpu: false | 'cuda' | 'vulkan' | 'auto'; threads: number }): string {
  return opts.gpu === false || !gpu ? `cpu, ${opts.threads} thread${opts.threads > 1 ? 's' : ''}` : gpu;
}

/**
 * The batching curve (bench/curve.ts) on llama.cpp: one context with a sequence for each of the largest n
 * (each sequence gets its own KV cells; batching on, node-llama-cpp's default "maximumParallelism"
 * order), a batch big enough for all n prompts at once, and the bench's --threads.
 */
export async function measureLlamaCurve(spec: BenchSpec, sequences: readonly number[], opts: { gpu: false | 'cuda' | 'vulkan' | 'auto'; threads: number }): Promise<EngineCurve> {
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: opts.gpu, build: 'never', logLevel: 'error' as never });
  const model = await llama.loadModel({ modelPath: spec.model, gpuLayers: opts.gpu === false ? 0 : 'max' });
  const maxN = Math.max(...sequences);
  const P = spec.prompt.length;
  const context = await model.createContext({
    threads: opts.threads,
    contextSize: P + curveMaxTokens(maxN, P, spec.genTokens) + 8, // per sequence
    sequences: maxN,
    batchSize: Math.min(Math.max(512, maxN * P), 8192),
    batching: { dispatchSchedule: 'nextCycle', itemPrioritizationStrategy: 'maximumParallelism' },
  });
  try {
    const point = async (n: number, prompt: readonly number[], decodeTokens: number) => {
      const { t0, stamps } = await timeSequences(n, decodeTokens, (i) => {
        const seq = context.getSequence();
        const tokens = seq.evaluate(curvePrompt(prompt, i) as never, { temperature: 0 });
        return { tokens: (async function* () { for await (const _ of tokens) yield 1; })(), stop: () => seq.dispose() };
      });
      return curvePoint(prompt.length, t0, stamps);
    };
    for (const n of sequences) await point(n, spec.prompt.slice(0, Math.min(8, P)), 2); // warm-up
    const points: CurvePoint[] = [];
    for (const n of sequences) {
      const runs: CurvePoint[] = [];
      for (let r = 0; r < spec.runs; r++) runs.push(await point(n, spec.prompt, spec.genTokens));
      points.push(medianPoint(runs));
      process.stderr.write(`bench: llama.cpp curve ${n} sequences: prefill ${points.at(-1)!.prefillTokensPerSecond.toFixed(1)} tok/s, decode ${points.at(-1)!.decodeTokensPerSecond.toFixed(1)} tok/s\n`);
    }
    return { engine: 'llama.cpp (node-llama-cpp)', backend: backendName(llama.gpu, opts), points };
  } finally {
    await context.dispose();
    await model.dispose();
  }
}
