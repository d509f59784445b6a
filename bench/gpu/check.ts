/**
 * The correctness half of a GPU-host run (bench/gpu/run-on-gpu.sh runs it before the bench): what the
 * adapter offers, and whether our engine on it still produces llama.cpp's greedy tokens on real model
 * files. llama.cpp runs on the CPU in the same process as the oracle (node-llama-cpp, f32 KV
 * cache, no flash attention), so nothing is recorded ahead and any model file can be checked.
 *
 *   node check.mjs --adapter gpu --models DIR|FILE... [--tokens 32] [--threads 4] [--out FILE]
 *
 * Judged as the test suite judges (test/engine/architectures.test.ts): along llama.cpp's greedy path,
 * our next-token probabilities may differ from its own by at most 0.005 on float weights and 0.05 on
 * quantized ones (the GPU products read f32 activations where llama.cpp's CPU quantizes them to int8, so
 * a choice between two tokens a few percent apart can go the other way: SwiftShader run with the GPU
 * kernels reproduces such flips exactly). Exit status 1 when a model is past its tolerance, 2 on an error
 * before any model ran. First, where the adapter has subgroups and dot4I8Packed, the int8 products
 * alone at small and large models' shapes (int8-check.ts: `int8` in the report, a case past its limit
 * fails the check). The JSON report names, per model and prompt, both token lists, the first
 * difference, llama.cpp's log-probability gap there, and the largest probability difference, along the
 * path in steps of 2 tokens (the decode products) and in one step (the prefill tiles), with the largest
 * KL divergence each way (`byPath`, `kl`: reported, not judged). A model
 * past its tolerance is run again with one engine option changed at a time (BISECT: int8 products off,
 * norms apart, attention untiled and unsplit, the last layer on every row), each run's largest
 * difference and first differing tokens in its `bisect`, so one lease says which part went wrong.
 */
import { Command } from 'commander';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { WebGpuEngine, type EngineOptions } from '../../engine/engine.ts';
import { describeAdapter } from '../../engine/gpu/select.ts';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { GgmlType } from '../../ggml/types.ts';
import { adapterChoiceFromEnv, openNodeDevice } from '../../engine/platform/node.ts';
import { gapAt, llamaCppReference, pathDivergence } from '../llama-oracle.ts';
import { KernelContext } from '../../kernels/runtime/context.ts';
import type { GpuCaps } from '../../kernels/runtime/caps.ts';
import { INT8_ERROR_LIMIT, int8Cases, runInt8Case, type Int8Result } from './int8-check.ts';

const PROMPTS = ['Once upon a time', 'The little dog', 'Tom and Lily went to the park. They saw'];
const FLOAT_TYPES = new Set<GgmlType>([GgmlType.F32, GgmlType.F16, GgmlType.BF16]);
const PROB_TOLERANCE = 5e-3;
const PROB_TOLERANCE_QUANTIZED = 5e-2;
/** Rows a step may sample: a prompt and its greedy tokens (--tokens 32) go through logits in one step. */
const PATH_TOKENS = 64;
/**
 * What a failing model is run again with, one at a time: an engine option, or a capability the kernels
 * are chosen by taken away (no subgroups: the float products without subgroup sums, as on adapters that
 * lack them; no dot4I8Packed: no int8 products at all), and every option off together. Each run's
 * `byPath` already holds the decode products and the prefill tiles apart.
 */
const ALL_OFF: EngineOptions = { int8Dot: false, fuseNorms: false, tiledAttention: false, splitAttentionFrom: false, pruneLastLayer: false };
const BISECT: { name: string; options: EngineOptions; caps?: Partial<GpuCaps> }[] = [
  { name: 'float products (int8Dot false)', options: { int8Dot: false } },
  { name: 'norms apart (fuseNorms false)', options: { fuseNorms: false } },
  { name: 'attention untiled and unsplit', options: { tiledAttention: false, splitAttentionFrom: false } },
  { name: 'last layer on every row (pruneLastLayer false)', options: { pruneLastLayer: false } },
  { name: 'no subgroups', options: {}, caps: { subgroups: false } },
  { name: 'no dot4I8Packed', options: {}, caps: { packedDot: false } },
  { name: 'all of the options above off', options: ALL_OFF },
  { name: 'all off, no subgroups', options: ALL_OFF, caps: { subgroups: false, packedDot: false } },
];

interface PromptResult {
  prompt: string;
  llama: number[];
  ours: number[];
  firstDifference: number | null;
  /** llama.cpp's log(p1 / p2) at the first difference. */
  gapThere: number | null;
  /** Largest difference of a next-token probability from llama.cpp's along its greedy path: the larger of the two below. */
  largestProbDifference: number;
  /**
   * The same with the path in steps of 2 tokens (the decode products) and in one step (the prefill
   * tiles, for a path of more than 8 tokens): one way alone could hide a wrong kernel of the other.
   */
  byPath: { decode: number; prefill: number };
  /**
   * The largest KL divergence (nats) of ours from llama.cpp's next-token distribution, both ways: reported,
   * not judged yet (no GPU run has said what right kernels give). Random-weight models hide wrong logits
   * from `byPath` (session 21: half of every int8 decode product wrong moved them by 6e-4 to 6e-3).
   */
  kl: { decode: number; prefill: number };
}

const o = new Command('check')
  .option('--adapter <choice>', 'our adapter: gpu, llvmpipe, swiftshader', 'gpu')
  .requiredOption('--models <paths...>', '.gguf files, or folders of them, to check')
  .option('--tokens <n>', 'greedy tokens per prompt', (v) => Number(v), 32)
  .option('--out <file>', 'write the JSON report here')
  .option('--threads <n>', "llama.cpp's CPU threads", (v) => Number(v), 4)
  .parse()
  .opts<{ adapter: string; models: string[]; tokens: number; threads: number; out?: string }>();

function modelFiles(paths: readonly string[]): string[] {
  return paths.flatMap((p) => (statSync(p).isDirectory() ? readdirSync(p).filter((f) => f.endsWith('.gguf')).sort().map((f) => join(p, f)) : [p]));
}

const report: Record<string, unknown> = { date: new Date().toISOString() };
let failed = false;
try {
  const choice = adapterChoiceFromEnv(o.adapter, '--adapter');
  const selected = await openNodeDevice(choice);
  report.adapter = {
    choice: selected.choice,
    description: describeAdapter(selected.adapterInfo),
    reason: selected.reason,
    skipped: selected.skipped,
    features: selected.adapterFeatures,
    limits: selected.adapterLimits,
    caps: selected.caps,
  };
  process.stderr.write(`check: adapter ${selected.choice}: ${describeAdapter(selected.adapterInfo)}\n`);
  // The int8 products alone, at small and large models' shapes (int8-check.ts), where the adapter runs them.
  if (selected.caps.subgroups && selected.caps.packedDot) {
    const ctx = new KernelContext(selected.device, selected.caps);
    const int8: (Int8Result | { case: string; error: string })[] = [];
    for (const c of int8Cases()) {
      const r = await runInt8Case(ctx, c).catch((e: Error) => ({ case: JSON.stringify(c), error: e.message }));
      int8.push(r);
      if (!('ok' in r) || !r.ok) {
        failed = true;
        process.stderr.write(`check: int8 ${JSON.stringify(r)}\n`);
      }
    }
    report.int8 = int8;
    process.stderr.write(`check: int8 products: ${int8.filter((r) => 'ok' in r && r.ok).length}/${int8.length} cases within ${INT8_ERROR_LIMIT} of the float64 product\n`);
  }
  selected.device.destroy();
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
  const models: Record<string, unknown> = {};
  for (const path of modelFiles(o.models)) {
    const file = basename(path);
    try {
      // Each engine owns (and destroys) its device.
      const load = (options: EngineOptions = {}, caps: Partial<GpuCaps> = {}) =>
        openNodeDevice(choice).then((d) => WebGpuEngine.load({ ...d, caps: { ...d.caps, ...caps } }, new FileSource(path), { contextLength: 256, maxSequences: PATH_TOKENS, prefixCache: false, ...options }));
      const engine = await load();
      let results: PromptResult[] = [];
      let refs: Awaited<ReturnType<typeof llamaCppReference>> = [];
      const compare = async (e: WebGpuEngine) => {
        const out: PromptResult[] = [];
        for (const [i, ref] of refs.entries()) {
          const ours = (await e.generate({ tokens: ref.prompt, maxTokens: ref.greedy.length, temperature: 0, stopAtEndOfGeneration: false }).result).tokens;
          const at = ref.greedy.findIndex((t, j) => ours[j] !== t);
          const [decode, prefill] = [await pathDivergence(e, ref, 2), await pathDivergence(e, ref)];
          const byPath = { decode: decode.prob, prefill: prefill.prob };
          const kl = { decode: decode.kl, prefill: prefill.kl };
          out.push({ prompt: PROMPTS[i], llama: ref.greedy, ours, firstDifference: at < 0 ? null : at, gapThere: at < 0 ? null : gapAt(ref, at), largestProbDifference: Math.max(byPath.decode, byPath.prefill), byPath, kl });
        }
        return out;
      };
      const quantized = (await parseGguf(new FileSource(path))).tensors.some((t) => !FLOAT_TYPES.has(t.type));
      const tolerance = quantized ? PROB_TOLERANCE_QUANTIZED : PROB_TOLERANCE;
      const worstOf = (rs: PromptResult[]) => Math.max(...rs.map((r) => r.largestProbDifference));
      const worstByPath = (rs: PromptResult[], of: 'byPath' | 'kl' = 'byPath') => ({ decode: Math.max(...rs.map((r) => r[of].decode)), prefill: Math.max(...rs.map((r) => r[of].prefill)) });
      try {
        refs = await llamaCppReference(llama, path, PROMPTS.map((p) => engine.tokenizer.encode(p)), engine.config.vocabSize, o.tokens, 'F32', o.threads);
        results = await compare(engine);
        const worst = worstOf(results);
        if (!(worst < tolerance)) failed = true;
        models[file] = { dispatchesPerStep: engine.stats().lastStepDispatches, kvFormat: engine.stats().kvFormat, quantized, tolerance, largestProbDifference: worst, byPath: worstByPath(results), kl: worstByPath(results, 'kl'), results };
      } finally {
        await engine.dispose();
      }
      const entry = models[file] as { largestProbDifference: number; bisect?: unknown[] };
      if (!(entry.largestProbDifference < tolerance)) {
        entry.bisect = [];
        for (const { name, options, caps } of BISECT) {
          // A run that cannot load or fails is recorded as such; the model's own results stay.
          try {
            const other = await load(options, caps);
            try {
              const rs = await compare(other);
              entry.bisect.push({ name, options, caps, largestProbDifference: worstOf(rs), byPath: worstByPath(rs), kl: worstByPath(rs, 'kl'), firstDifferences: rs.map((r) => r.firstDifference), firstTokens: rs.map((r) => r.ours.slice(0, 4)) });
              process.stderr.write(`check: ${file} with ${name}: largest probability difference ${worstOf(rs).toExponential(2)}, first differences ${rs.map((r) => r.firstDifference ?? 'none').join(', ')}\n`);
            } finally {
              await other.dispose();
            }
          } catch (e) {
            entry.bisect.push({ name, options, caps, error: (e as Error).message });
            process.stderr.write(`check: ${file} with ${name}: ${(e as Error).message}\n`);
          }
        }
      }
      const same = results.filter((r) => r.firstDifference === null).length;
      const m = models[file] as { largestProbDifference: number; tolerance: number; byPath: { decode: number; prefill: number }; kl: { decode: number; prefill: number } };
      process.stderr.write(
        `check: ${file}: ${same}/${results.length} prompts give llama.cpp's ${o.tokens} greedy tokens${results.filter((r) => r.firstDifference !== null).map((r) => `; "${r.prompt}" differs at ${r.firstDifference} (llama.cpp gap ${r.gapThere?.toFixed(4)})`).join('')}; ` +
          `largest probability difference ${m.largestProbDifference.toExponential(2)} (decode products ${m.byPath.decode.toExponential(2)}, prefill tiles ${m.byPath.prefill.toExponential(2)}; tolerance ${m.tolerance}); largest KL divergence ${m.kl.decode.toExponential(2)} / ${m.kl.prefill.toExponential(2)} nats\n`,
      );
    } catch (e) {
      failed = true;
      models[file] = { error: (e as Error).stack ?? String(e) };
      process.stderr.write(`check: ${file}: ${(e as Error).stack ?? String(e)}\n`);
    }
  }
  report.models = models;
} catch (e) {
  report.error = (e as Error).stack ?? String(e);
  process.stderr.write(`check: ${(e as Error).message}\n`);
  if (o.out) writeFileSync(o.out, JSON.stringify(report, null, 1) + '\n');
  process.exit(2);
}
if (o.out) writeFileSync(o.out, JSON.stringify(report, null, 1) + '\n');
process.stderr.write(`check: ${failed ? 'FAILED' : 'passed'}\n`);
process.exit(failed ? 1 : 0);
