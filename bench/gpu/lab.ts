/**
 * The GPU host's kernel lab (run-on-gpu.sh --lab): what a device lease is for besides the bench. On one
 * adapter it measures, in one process,
 *   1. the adapter's limits (streaming read, FMA, dispatch cost; kernels/probes/);
 *   2. the decode matrix-vector kernels on a 1B-class decode step's Q8_0 products (16 layers of Llama-3.2-1B
 *      shapes, each layer its own weights, then the output head), plain and with the RMSNorm folded in,
 *      in every workgroup shape worth trying (MatVecKernel's gpuGroup), each as GB/s of weights and a
 *      share of the read limit;
 *   3. decode attention alone on both benched models' shapes at spans of 512 to 8192 positions, each
 *      (token, head) pair in one workgroup and split over several (flash-decoding);
 *   4. a 1B-class prefill step's products (Q8_0, the prompt's tokens) in each GPU tile (MatMulKernel's
 *      tiles, tiles-vec4 and tiles-dp4a, the int8 tile also in steps of 4 blocks and in tiles of 64
 *      tokens; Q6_K in the float and int8 tiles), as GFLOP/s and a share of the FMA limit, and the same shapes
 *      on int8 subgroup matrices where Dawn offers them with its unsafe APIs allowed (an experiment:
 *      kernels/probes/subgroup-matrix.ts);
 *   5. each given model's prefill and decode step kernel by kernel (bench/profile.ts), its decode loop
 *      as requests run it (per decode step the wall time, the host's encoding and submitting and its
 *      waiting for samples), with the norms folded into the products and apart, attention split and
 *      whole, after the prompt and after a long one (--long, 4096 tokens), and the time to first token
 *      of a long prompt in steps of 256 and 512 tokens.
 * and writes it all to one JSON file. Its numbers pick the GPU kernels' defaults; the bench reports them.
 *
 *   node lab.mjs --adapter gpu --out lab.json [--models a.gguf b.gguf] [--prompt 512] [--no-products] [--no-attention] [--no-prefill] [--no-profiles]
 */
import { Command } from 'commander';
import { create } from 'webgpu';
import { writeFileSync } from 'node:fs';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { adapterChoiceFromEnv, openNodeDevice } from '../../engine/platform/node.ts';
import { describeAdapter } from '../../engine/gpu/select.ts';
import { matvecVariant, type MatVecVariant } from '../../kernels/matvec.ts';
import type { ProductOptions } from '../../kernels/matmul-params.ts';
import type { MatMulVariant } from '../../kernels/matmul.ts';
import { measureAdapterLimits, type AdapterLimits } from '../../kernels/probes/limits.ts';
import { measureMatVec, type MatVecRate, type MatVecShape } from '../../kernels/probes/measure-matvec.ts';
import { measureDecodeAttention, type AttentionRate, type AttentionShape } from '../../kernels/probes/measure-attention.ts';
import { measureMatMul, type MatMulRate, type MatMulShape } from '../../kernels/probes/measure-matmul.ts';
import { probeSubgroupMatrix, type SubgroupMatrixProbe } from '../../kernels/probes/subgroup-matrix.ts';
import { AttentionKernel, SPLIT_WORKGROUPS } from '../../kernels/attention.ts';
import { KernelContext } from '../../kernels/runtime/context.ts';
import type { GpuCaps } from '../../kernels/runtime/caps.ts';
import { onFreshDevice, patternDot } from '../limits.ts';
import { formatProfile, profileOurs, type BenchProfile } from '../profile.ts';
import { countSteps, perStep } from '../ours.ts';
import { loadEngine } from '../../engine/node.ts';

/** One decode step's products of a Llama-3.2-1B-shaped model (hidden 2048, FFN 8192, 8 KV heads of 64). */
export function decodeStepShapes(layers = 16, d = 2048, ffn = 8192, kv = 512, vocab = 128256): MatVecShape[] {
  const each = (label: string, n: number, k: number, copies: number): MatVecShape => ({ label, products: [{ n, k, copies }] });
  return [
    each(`qkv ${d + 2 * kv}x${d}`, d + 2 * kv, d, layers),
    each(`o ${d}x${d}`, d, d, layers),
    each(`gate|up ${2 * ffn}x${d}`, 2 * ffn, d, layers),
    each(`down ${d}x${ffn}`, d, ffn, layers),
    each(`head ${vocab}x${d}`, vocab, d, 1),
  ];
}

interface Config {
  variant: MatVecVariant;
  gpuGroup?: ProductOptions['gpuGroup'];
  /** RMSNorm folded in (the QKV, gate|up and head products of a decode step). */
  norm?: boolean;
}

function configLabel(c: Config): string {
  const g = c.gpuGroup;
  return `${c.variant}${c.norm ? '-norm' : ''} ${g ? `wg${g.wg} rows${g.rows}${g.units ? ` units${g.units}` : ''}` : '(default)'}`;
}

/**
 * The shapes worth trying. Session 14's lease settled the float subgroup kernel at one subgroup of 32 a
 * workgroup, one row (units a lane at once measured alike in session 15). Open since session 17: the
 * int8 kernel (dp4a: x quantized in workgroup memory, dot4I8Packed), in its default 128 invocations over
 * 8 rows and around it (rows a workgroup trade x's quantizing, once a workgroup, against workgroups for
 * small products), plain and norm-fused, against the float kernels.
 */
export function configsFor(caps: Pick<GpuCaps, 'subgroups' | 'packedDot'>): Config[] {
  const coop: Config[] = [{ variant: 'coop' }, { variant: 'coop', norm: true }];
  if (!caps.subgroups) return coop;
  const sg: Config[] = [{ variant: 'subgroup', gpuGroup: { wg: 32, rows: 1 } }, { variant: 'subgroup', norm: true, gpuGroup: { wg: 32, rows: 1 } }];
  if (!caps.packedDot) return [...sg, ...coop];
  const shapes = [{ wg: 128, rows: 8 }, { wg: 128, rows: 4 }, { wg: 128, rows: 16 }, { wg: 64, rows: 4 }, { wg: 256, rows: 32 }];
  const dp4a = shapes.map((gpuGroup): Config => ({ variant: 'dp4a', gpuGroup }));
  const dp4aNorm = shapes.slice(0, 3).map((gpuGroup): Config => ({ variant: 'dp4a', norm: true, gpuGroup }));
  // The engine's own choice by each product's rows (dp4aGroup).
  const byShape: Config[] = [{ variant: 'dp4a' }, { variant: 'dp4a', norm: true }];
  return [...byShape, ...dp4a, ...dp4aNorm, ...sg, ...coop];
}

export interface LabKernelRow extends MatVecRate {
  config: string;
  percentOfRead: number;
}

export interface LabResult {
  date: string;
  adapter: string;
  description: string;
  limits: AdapterLimits;
  defaultVariant: MatVecVariant;
  kernels: LabKernelRow[];
  /** unsafeFeatures(): what the adapter offers with Dawn's unsafe APIs allowed. */
  experimental: Awaited<ReturnType<typeof unsafeFeatures>>;
  attention: AttentionRate[];
  /** A 1B prefill step's products in each GPU tile, as GFLOP/s and a share of the FMA probe. */
  prefill: (MatMulRate & { config: string; percentOfFma: number })[];
  /** The same products on int8 subgroup matrices (kernels/probes/subgroup-matrix.ts), or why not. */
  subgroupMatrix: SubgroupMatrixProbe | string;
  profiles: (BenchProfile & { model: string; loop: DecodeLoop[]; ttft: StepSizeTtft[] })[];
  errors: string[];
}

/**
 * perStep's split of a step, pipelined decode forced on or off, norms folded into the products or not,
 * attention split over workgroups from the engine's default span or never, Q8_0 decode products on int8
 * x or float x, after a prompt of `promptTokens`.
 */
export type DecodeLoop = ReturnType<typeof perStep> & { pipelined: boolean; fuseNorms: boolean; splitAttention: boolean; int8Dot: boolean; promptTokens: number; tokensPerSecond: number };

interface LoopOptions {
  fuseNorms: boolean;
  splitAttention: boolean;
  /** EngineOptions.int8Dot (default true). */
  int8Dot?: boolean;
  /** Pipelined decode forced on or off, one run each, in this order. */
  pipelined: boolean[];
}

/**
 * The decode loop as requests run it, against the replayed step (the profile): per decode step its wall
 * time, the host's encoding and submitting, and its waiting for the samples; pipelined and not. With
 * `fuseNorms` false the norms run as passes of their own (EngineOptions.fuseNorms): more dispatches for
 * the host, faster products for the GPU (the lab's norm-fused shapes stream ~35% slower than plain).
 * Without `splitAttention` each (token, head) pair's positions stay in one workgroup; with `int8Dot`
 * false Q8_0 decode products read float x (the float subgroup kernel).
 */
async function decodeLoop(model: string, adapter: string, prompt: number[], o: LoopOptions): Promise<DecodeLoop[]> {
  // Split from 256 positions whatever the model's default (gpuSplitAttentionFrom), so both ways are timed.
  const engine = await loadEngine({ model, adapter, contextLength: prompt.length + 80, prefixCache: false, fuseNorms: o.fuseNorms, int8Dot: o.int8Dot ?? true, splitAttentionFrom: o.splitAttention ? 256 : false });
  try {
    const run = { tokens: prompt, temperature: 0, stopAtEndOfGeneration: false, maxTokens: 64 } as const;
    await engine.generate(run).result;
    // The prompt's step alone, taken out of each run's counters (perStep).
    const promptStep = (await countSteps(engine, () => engine.generate({ ...run, maxTokens: 1 }).result)).counters;
    const out: DecodeLoop[] = [];
    for (const pipelined of o.pipelined) {
      engine.setPipelinedDecode(pipelined);
      const { counters, result: r } = await countSteps(engine, () => engine.generate(run).result);
      out.push({ pipelined, fuseNorms: o.fuseNorms, splitAttention: o.splitAttention, int8Dot: o.int8Dot ?? true, promptTokens: prompt.length, ...perStep(promptStep, counters), tokensPerSecond: r.timings.decodeTokensPerSecond });
    }
    return out;
  } finally {
    await engine.dispose();
  }
}

/**
 * Decode attention alone (kernels/probes/measure-attention.ts) on the two benched models' shapes at
 * spans from the bench's to a long chat's, one and four sequences, in one workgroup a (token, head) pair
 * and split: the split the engine would choose (AttentionKernel.splitsFor) and powers of two around it.
 */
async function attentionRates(choice: Parameters<typeof onFreshDevice>[0], log: (line: string) => void, errors: string[]): Promise<AttentionRate[]> {
  const shapes: AttentionShape[] = [
    { label: 'llama-3.2-1b 32/8 heads of 64, 16 layers', heads: 32, kvHeads: 8, headDim: 64, layers: 16 },
    { label: 'smollm2-135m 9/3 heads of 64, 30 layers', heads: 9, kvHeads: 3, headDim: 64, layers: 30 },
  ];
  const out: AttentionRate[] = [];
  for (const shape of shapes) {
    for (const span of [512, 2048, 8192]) {
      for (const tokens of [1, 4]) {
        try {
          const rows = await onFreshDevice(choice, (own) => {
            const ctx = new KernelContext(own.device, own.caps);
            const chosen = new AttentionKernel(ctx, 'workgroup').splitsFor(tokens, shape.heads, shape.headDim, span, 1);
            const most = Math.floor(SPLIT_WORKGROUPS / (tokens * shape.heads));
            const counts = [...new Set([chosen, 2, 4, 8, 16, 32])].filter((s) => s <= most);
            return measureDecodeAttention(ctx, shape, tokens, span, counts, 5);
          });
          out.push(...rows);
          log(`attention ${shape.label}, ${tokens} token(s) at ${span}: ${rows.map((r) => `${r.splits} split(s) ${(r.ms * 1000 / shape.layers).toFixed(1)} us a layer (${r.GBps.toFixed(0)} GB/s)`).join('; ')}`);
        } catch (e) {
          errors.push(`attention ${shape.label} ${tokens}x${span}: ${(e as Error).message}`);
          log(`attention ${shape.label} ${tokens}x${span} failed: ${(e as Error).message}`);
        }
      }
    }
  }
  return out;
}

export interface StepSizeTtft {
  maxTokensPerStep: number;
  /** Q8_0 products on int8 x (EngineOptions.int8Dot). */
  int8Dot: boolean;
  /** Prefill attention in tiles of tokens (EngineOptions.tiledAttention). */
  tiledAttention: boolean;
  promptTokens: number;
  /** Median of three. */
  timeToFirstTokenMs: number;
}

/**
 * Time to first token of a prompt twice the given one's length, in steps of 256 tokens and of 512 (the
 * GPU default since session 14, chosen for the host's per-step encoding cost), and in steps of 512 with
 * the products on float x (int8Dot false) and with attention a workgroup per token and head
 * (tiledAttention false).
 */
async function ttftBySteps(model: string, adapter: string, prompt: number[]): Promise<StepSizeTtft[]> {
  const long = [...prompt, ...prompt.slice(1)];
  const out: StepSizeTtft[] = [];
  const configs = [
    { maxTokensPerStep: 256, int8Dot: true, tiledAttention: true },
    { maxTokensPerStep: 512, int8Dot: true, tiledAttention: true },
    { maxTokensPerStep: 512, int8Dot: false, tiledAttention: true },
    { maxTokensPerStep: 512, int8Dot: true, tiledAttention: false },
  ];
  for (const { maxTokensPerStep, int8Dot, tiledAttention } of configs) {
    const engine = await loadEngine({ model, adapter, contextLength: long.length + 8, prefixCache: false, maxTokensPerStep, int8Dot, tiledAttention });
    try {
      const run = { tokens: long, temperature: 0, stopAtEndOfGeneration: false, maxTokens: 1 } as const;
      await engine.generate(run).result;
      const ms: number[] = [];
      for (let i = 0; i < 3; i++) ms.push((await engine.generate(run).result).timings.timeToFirstTokenMs);
      out.push({ maxTokensPerStep, int8Dot, tiledAttention, promptTokens: long.length, timeToFirstTokenMs: ms.sort((a, b) => a - b)[1] });
    } finally {
      await engine.dispose();
    }
  }
  return out;
}

/**
 * The features Dawn's Vulkan adapter offers with its unsafe APIs allowed (the toggle Chromium's
 * --enable-unsafe-webgpu sets): whether this GPU would take experimental ones such as subgroup matrices
 * (tensor cores: llama.cpp's WebGPU backend reports its prefill 3-4x faster with them), and their
 * configurations. Nothing in the engine asks for them yet; this says whether a kernel could.
 */
async function unsafeFeatures(): Promise<{ features: string[]; subgroupMatrixConfigs?: unknown } | string> {
  const gpu = create(['backend=vulkan', 'enable-dawn-features=allow_unsafe_apis']);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return 'no adapter';
  const info = adapter.info as GPUAdapterInfo & { subgroupMatrixConfigs?: readonly Record<string, unknown>[] };
  // Each configuration's fields are getters (session 16 logged them as {}): copied out by name.
  const fields = ['componentType', 'resultComponentType', 'M', 'N', 'K'];
  const subgroupMatrixConfigs = info.subgroupMatrixConfigs?.map((c) => Object.fromEntries(fields.map((f) => [f, c[f]])));
  return { features: [...adapter.features].map(String).sort(), subgroupMatrixConfigs };
}

/**
 * A 1B prefill step's products on int8 subgroup matrices (tensor cores), on a device of their own with
 * Dawn's unsafe APIs allowed, where the adapter offers them.
 */
async function subgroupMatrixRates(tokens: number, log: (line: string) => void): Promise<SubgroupMatrixProbe | string> {
  const gpu = create(['backend=vulkan', 'enable-dawn-features=allow_unsafe_apis']);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  const feature = 'chromium-experimental-subgroup-matrix' as GPUFeatureName;
  if (!adapter?.features.has(feature) || !adapter.features.has('subgroups')) return 'not offered';
  const device = await adapter.requestDevice({ requiredFeatures: ['subgroups', feature] });
  try {
    return await probeSubgroupMatrix(device, prefillShapes(), tokens, log);
  } finally {
    device.destroy();
  }
}

/** A 1B-class prefill step's products (Llama-3.2-1B shapes), four copies each: compute-bound, so fewer weights do. */
export function prefillShapes(d = 2048, ffn = 8192, kv = 512): MatMulShape[] {
  return [
    { label: `qkv ${d + 2 * kv}x${d}`, n: d + 2 * kv, k: d, copies: 4 },
    { label: `o ${d}x${d}`, n: d, k: d, copies: 4 },
    { label: `gate|up ${2 * ffn}x${d}`, n: 2 * ffn, k: d, copies: 4 },
    { label: `down ${d}x${ffn}`, n: d, k: ffn, copies: 4 },
  ];
}

/**
 * The prefill products of `tokens` in each GPU tile (MatMulKernel's variants), each on a device of its
 * own; the int8 tile where the device offers dot4I8Packed (its rate still counted in multiply-adds
 * against the f32 FMA probe).
 */
async function prefillRates(choice: Parameters<typeof onFreshDevice>[0], caps: Pick<GpuCaps, 'packedDot'>, tokens: number, fmaGflops: number, log: (line: string) => void, errors: string[]): Promise<(MatMulRate & { config: string; percentOfFma: number })[]> {
  const out: (MatMulRate & { config: string; percentOfFma: number })[] = [];
  // Q8_0 in every tile, the int8 tile also in steps of 4 blocks, in tiles of 64 tokens, and both; Q6_K
  // (Q4_K_M's down products) in the float tile and in int8 (its block halves scaled apart, since
  // session 21), also in steps of 4 blocks.
  const configs: { type: GgmlType; variant: MatMulVariant; opts?: ProductOptions }[] = [
    ...(['tiles', 'tiles-vec4'] as const).map((variant) => ({ type: GgmlType.Q8_0, variant })),
    ...(caps.packedDot
      ? [GgmlType.Q8_0, GgmlType.Q6_K].flatMap((type) => [
          ...(type === GgmlType.Q6_K ? [{ type, variant: 'tiles-vec4' as const }] : []),
          { type, variant: 'tiles-dp4a' as const },
          { type, variant: 'tiles-dp4a' as const, opts: { int8TileBlocks: 4 as const } },
          ...(type === GgmlType.Q8_0
            ? [
                { type, variant: 'tiles-dp4a' as const, opts: { int8TileTokens: 64 as const } },
                { type, variant: 'tiles-dp4a' as const, opts: { int8TileBlocks: 4 as const, int8TileTokens: 64 as const } },
              ]
            : []),
        ])
      : []),
  ];
  for (const { type, variant, opts } of configs) {
    const name = `${typeName(type)} ${variant}${opts?.int8TileBlocks ? `, ${opts.int8TileBlocks} blocks a step` : ''}${opts?.int8TileTokens ? `, ${opts.int8TileTokens} tokens a tile` : ''}`;
    try {
      const rows = await onFreshDevice(choice, (own) => measureMatMul(new KernelContext(own.device, own.caps), type, variant, prefillShapes(), tokens, (k) => patternDot(type, k), 5, opts));
      for (const r of rows) out.push({ ...r, config: name, percentOfFma: (100 * r.GFLOPs) / fmaGflops });
      const ms = rows.reduce((a, r) => a + r.ms, 0);
      log(`prefill products (${tokens} tokens) ${name}: ${rows.map((r) => `${r.shape} ${r.GFLOPs.toFixed(0)} GFLOP/s`).join('; ')}; ${ms.toFixed(2)} ms for 4 layers`);
    } catch (e) {
      errors.push(`prefill ${name}: ${(e as Error).message}`);
      log(`prefill ${name} failed: ${(e as Error).message}`);
    }
  }
  return out;
}

async function main(): Promise<void> {
  const o = new Command('lab')
    .option('--adapter <name>', 'adapter (gpu, llvmpipe, swiftshader)', 'gpu')
    .requiredOption('--out <file>', 'JSON file to write')
    .option('--models <paths...>', 'GGUF files whose steps to profile', [])
    .option('--prompt <n>', 'prompt tokens of the profiled prefill', '512')
    .option('--layers <n>', 'layers of the synthetic decode step', '16')
    .option('--long <n>', 'prompt tokens of the long decode loop', '4096')
    .option('--no-products', 'skip the decode products in workgroup shapes (part 2)')
    .option('--no-attention', 'skip decode attention alone, whole and split (part 3)')
    .option('--no-prefill', 'skip the prefill products in each tile and on subgroup matrices (part 4)')
    .option('--no-profiles', "skip the models' steps, decode loops and TTFT (part 5)")
    .parse()
    .opts<{ adapter: string; out: string; models: string[]; prompt: string; layers: string; long: string; products: boolean; attention: boolean; prefill: boolean; profiles: boolean }>();
  const log = (line: string) => process.stderr.write(`lab: ${line}\n`);
  const errors: string[] = [];
  const sel = await openNodeDevice(adapterChoiceFromEnv(o.adapter, '--adapter'));
  const description = describeAdapter(sel.adapterInfo);
  log(`${sel.choice}: ${description}; subgroups ${sel.caps.subgroups} (${sel.caps.subgroupMinSize}-${sel.caps.subgroupMaxSize}), f16 ${sel.caps.f16}, timestamps ${sel.caps.timestamps}`);
  const limits = await measureAdapterLimits(sel.device, sel.caps, { onProgress: (w) => log(w) });
  log(`stream read ${limits.streamReadGBps.toFixed(0)} GB/s (${JSON.stringify(limits.streamReadBest)}), FMA ${limits.fmaGflops.toFixed(0)} GFLOP/s, dispatch ${limits.dispatchUs.toFixed(2)} us`);

  const experimental = o.adapter === 'gpu' ? await unsafeFeatures().catch((e: Error) => `failed: ${e.message}`) : 'not a GPU';
  log(`with unsafe APIs allowed: ${JSON.stringify(experimental)}`);

  sel.device.destroy();
  const kernels: LabKernelRow[] = [];
  const shapes = decodeStepShapes(Number(o.layers));
  // The norm-fused products of a decode step: QKV, gate|up and the head.
  const normShapes = shapes.filter((sh) => !/^(o|down) /.test(sh.label));
  for (const config of o.products ? configsFor(sel.caps) : []) {
    try {
      const rows = await onFreshDevice(sel.choice, (own) =>
        measureMatVec(new KernelContext(own.device, own.caps), GgmlType.Q8_0, config.variant, config.norm ? normShapes : shapes, (k) => patternDot(GgmlType.Q8_0, k), 5, { gpuGroup: config.gpuGroup, norm: config.norm }),
      );
      for (const r of rows) kernels.push({ ...r, config: configLabel(config), percentOfRead: (100 * r.GBps) / limits.streamReadGBps });
      const total = rows.reduce((a, r) => a + r.ms, 0);
      log(`${configLabel(config)}: ${rows.map((r) => `${r.shape} ${r.GBps.toFixed(0)} GB/s ${r.ms.toFixed(3)} ms`).join('; ')}; step ${total.toFixed(3)} ms`);
    } catch (e) {
      errors.push(`${configLabel(config)}: ${(e as Error).message}`);
      log(`${configLabel(config)} failed: ${(e as Error).message}`);
    }
  }

  const attention = o.attention ? await attentionRates(sel.choice, log, errors) : [];
  const prefill = o.prefill ? await prefillRates(sel.choice, sel.caps, Number(o.prompt), limits.fmaGflops, log, errors) : [];
  const subgroupMatrix = o.prefill && o.adapter === 'gpu' ? await subgroupMatrixRates(Number(o.prompt), log).catch((e: Error) => `failed: ${e.message}`) : 'not run';
  if (typeof subgroupMatrix === 'string') log(`subgroup matrices: ${subgroupMatrix}`);

  const profiles: LabResult['profiles'] = [];
  for (const model of o.profiles ? o.models : []) {
    try {
      // Any ids below 256 exist in every model here; the step's cost does not depend on which.
      const prompt = [1, ...Array.from({ length: Number(o.prompt) - 1 }, (_, i) => 3 + ((i * 7919) % 250))];
      const p = await profileOurs({ model, prompt, genTokens: 8, runs: 1, concurrency: 1 }, o.adapter);
      // A long chat's decode: the same prompt repeated to --long tokens.
      const long = [1, ...Array.from({ length: Number(o.long) - 1 }, (_, i) => prompt[1 + (i % (prompt.length - 1))])];
      const loop = [
        ...(await decodeLoop(model, o.adapter, prompt, { fuseNorms: true, splitAttention: true, pipelined: [true, false, true] })),
        ...(await decodeLoop(model, o.adapter, prompt, { fuseNorms: true, splitAttention: true, int8Dot: false, pipelined: [true, true] })),
        ...(await decodeLoop(model, o.adapter, prompt, { fuseNorms: false, splitAttention: true, pipelined: [true, true] })),
        ...(await decodeLoop(model, o.adapter, prompt, { fuseNorms: true, splitAttention: false, pipelined: [true, true] })),
        ...(await decodeLoop(model, o.adapter, long, { fuseNorms: true, splitAttention: true, pipelined: [true, true] })),
        ...(await decodeLoop(model, o.adapter, long, { fuseNorms: true, splitAttention: false, pipelined: [true, true] })),
      ];
      const ttft = await ttftBySteps(model, o.adapter, prompt);
      profiles.push({ model, ...p, loop, ttft });
      for (const t of ttft) log(`TTFT of ${t.promptTokens} tokens in steps of ${t.maxTokensPerStep}, ${t.int8Dot ? 'int8' : 'float'} x, attention ${t.tiledAttention ? 'tiled' : 'a workgroup a head'}: ${t.timeToFirstTokenMs.toFixed(1)} ms`);
      process.stdout.write(`\n${model}\n${formatProfile(p)}\n`);
      for (const l of loop) log(`decode loop after ${l.promptTokens} tokens, pipelined ${l.pipelined}, norms ${l.fuseNorms ? 'folded' : 'apart'}, attention ${l.splitAttention ? 'split' : 'whole'}, ${l.int8Dot ? 'int8' : 'float'} x: ${l.msPerStep.toFixed(3)} ms a step, host ${l.hostMsPerStep.toFixed(3)}, submit ${l.submitMsPerStep.toFixed(3)}, waiting for samples ${l.waitMsPerStep.toFixed(3)}, ${l.tokensPerSecond.toFixed(1)} tok/s`);
    } catch (e) {
      errors.push(`profile ${model}: ${(e as Error).message}`);
      log(`profile ${model} failed: ${(e as Error).message}`);
    }
  }
  const result: LabResult = { date: new Date().toISOString(), adapter: sel.choice, description, limits, experimental, defaultVariant: matvecVariant(sel.caps, GgmlType.Q8_0), kernels, attention, prefill, subgroupMatrix, profiles, errors };
  writeFileSync(o.out, JSON.stringify(result, null, 2) + '\n');
  log(`wrote ${o.out} (${typeName(GgmlType.Q8_0)} kernels: ${kernels.length} rows, ${profiles.length} profiles, ${errors.length} errors)`);
}

await main();
