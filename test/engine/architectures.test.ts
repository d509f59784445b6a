/**
 * Parity with llama.cpp for the architectures beside llama (qwen2, qwen3, phi3, gemma): each is synthesized
 * at test size with the real model's metadata and tensor names (bench/synth presets), run by llama.cpp
 * (node-llama-cpp, CPU) and by our engine from the same file and the same token ids, and must give
 * identical greedy tokens and near-identical next-token distributions. A control runs the same weights
 * with the architecture's differences switched off and must disagree, so the comparison is shown to
 * notice them. Dispatches per decode step are pinned, llama's included.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthModel, type SynthModel } from '../../bench/synth/model.ts';
import { PRESETS, type ModelPreset, type SynthInit } from '../../bench/synth/presets.ts';
import { WebGpuEngine } from '../../engine/engine.ts';
import { quantize } from '../../engine/gguf/quant/index.ts';
import { GgmlType } from '../../ggml/types.ts';
import { gv, writeGguf, type GgufTensorSpec, type GgufWriteValue } from '../../engine/gguf/write.ts';
import { writeFileAtomically } from '../../engine/loader/file-sink-node.ts';
import { BytesSource } from '../../engine/loader/source.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { loadEngine } from '../../engine/node.ts';
import { openNodeDevice } from '../../engine/platform/node.ts';
import { gpuKernelsEngine, greedyRun } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';
import { largestProbDifference, llamaCppReference, smallestGap, softmax, type LlamaCppReference } from '../../bench/llama-oracle.ts';

/** Greedy tokens compared per prompt (the issue asks for at least 16). */
const STEPS = 24;
/**
 * Largest difference allowed between our next-token probabilities and llama.cpp's. Observed: at most
 * ~2e-3, mostly from the software adapter's sin/cos in RoPE (Vulkan allows 2^-11 absolute error) and, for
 * gemma, llama.cpp's f16 GELU table; a missing bias, norm or scale moves probabilities by 0.1 or more.
 */
const PROB_TOLERANCE = 5e-3;
/**
 * Smallest log-probability gap between llama.cpp's first and second choice along each greedy path. The
 * prompts were chosen for gaps well above our numerical differences, so a greedy decision never hinges on
 * rounding; if the weights or presets change, this check says the prompts must be chosen again.
 */
const MIN_GAP = 0.01;
/**
 * The same for models with Q8_0 or Q4_0 block matrices, whose products (ours and llama.cpp's CPU
 * backend's) read x quantized to int8: a value on a rounding boundary moves a whole step with the last
 * bit of its input, so the small differences above reach the logits larger. Observed 1.1e-2 (Q8_0),
 * 5e-3 (Q4_0) and 3.2e-2 (Q4_K; 2e-6 on two of its three prompts); before every product read x quantized
 * as llama.cpp's do, the Q8_0 model's greedy tokens differed and Q4_K's probabilities by 0.5-0.7.
 */
const PROB_TOLERANCE_QUANTIZED = 5e-2;
/**
 * The same on SwiftShader, whose exp, sin and cos are less exact than llvmpipe's: more activations land
 * on the other side of a rounding boundary. Observed up to 0.14 (greedy tokens still llama.cpp's).
 */
const PROB_TOLERANCE_QUANTIZED_SWIFTSHADER = 0.2;
/** The GPU kernels on SwiftShader: observed at most 1.1e-3 (phi3), 1.3e-4 to 5.2e-4 for the others. */
const GPU_PROB_TOLERANCE = 5e-3;
const quantizedTolerance = (engine: WebGpuEngine) => (engine.stats().adapter === 'swiftshader' ? PROB_TOLERANCE_QUANTIZED_SWIFTSHADER : PROB_TOLERANCE_QUANTIZED);

/**
 * Larger weights than the synthesizer's default (std 0.02 gives near-uniform logits and near-ties):
 * block matrices of std 0.25 make the blocks, not the token's own embedding, decide the next token, and
 * norm weights around 1 (not exactly 1) make a misapplied norm weight visible.
 */
const INIT: SynthInit = { matrixStd: 0.25, embeddingStd: 0.5, outputStd: 0.25, biasStd: 0.5, normJitter: 0.2 };

/** Dispatches after the layers of a decode step: gathered output norm, output head, two sampling passes. */
const HEAD = 4;
/** A llama layer's dispatches: norm, QKV, RoPE + KV store, attention, O (+ residual), norm, gate-up, down (SwiGLU folded in, + residual). */
const LAYER = 8;
/**
 * On llvmpipe (GpuCaps.orderedAtomics) a stacked QKV product runs RoPE + KV store as its tail
 * (kernels/matvec-tail.ts) where heads are whole vec4s and there is no per-head norm between: one
 * dispatch fewer a layer.
 */
const tailsOn = (engine: { stats(): { adapter: string } }) => engine.stats().adapter === 'llvmpipe';

interface Case {
  preset: keyof typeof PRESETS;
  init: SynthInit;
  prompts: number[][];
  /** Dispatches of one decode step: embedding + per layer + head (gather, norm, output, sample). */
  dispatches: number;
  /** On llvmpipe, where the QKV product's tail takes RoPE + KV store (default: dispatches). */
  cpuDispatches?: number;
  /** The same weights with the architecture's differences off, for the control. */
  control: { what: string; edit: (metadata: Metadata) => Metadata };
}

/** Declare the model plain llama: its keys renamed, so biases, Q/K norms, NeoX order, GeGLU and scaling are all off. */
/**
 * The same architectures through the GPU kernels (SwiftShader with its caps marked as not software, as
 * gpu-variants.test.ts does): norm-fused products, and decode attention that rotates Q and K by the
 * architecture's RoPE (NeoX order for qwen2 and qwen3, after qwen3's per-head norms; partial rotary for
 * phi3) and stores K and V itself. Once per test run: the SwiftShader pass of the suite skips it.
 */
describe.skipIf(process.env.SVC_ADAPTER === 'swiftshader')('the architectures on the GPU kernels (SwiftShader as a GPU)', () => {
  for (const c of CASES) {
    it(`${c.preset}: greedy tokens are llama.cpp's, next-token probabilities within ${GPU_PROB_TOLERANCE}, decode attention rotating`, async () => {
      const preset: ModelPreset = { ...PRESETS[c.preset], init: c.init };
      const synth = synthModel(preset, 'f32', 1, c.preset);
      const path = join(dir, `${c.preset}-gpu.gguf`);
      await writeFileAtomically(path, (sink) => writeGguf(sink, synth.spec, synth.tensorData));
      const refs = await llamaCppReference(llama, path, c.prompts, preset.vocab, STEPS);
      const selected = await openNodeDevice('swiftshader');
      selected.caps = { ...selected.caps, software: false };
      const engine = await WebGpuEngine.load(selected, new FileSource(path), { contextLength: 256, maxSequences: 2, prefixCache: false });
      try {
        for (const ref of refs) {
          const ours = await engine.generate({ tokens: ref.prompt, maxTokens: STEPS, temperature: 0, stopAtEndOfGeneration: false }).result;
          expect(ours.tokens, `prompt ${JSON.stringify(ref.prompt)}`).toEqual(ref.greedy);
          expect(await largestProbDifference(engine, ref)).toBeLessThan(GPU_PROB_TOLERANCE);
        }
        // Last: replaying a step leaves the engine's buffers altered.
        const step = await engine.profileLastStep({ tokens: c.prompts[0], maxTokens: 2, temperature: 0, stopAtEndOfGeneration: false });
        const labels = step.kernels.map((k) => k.label);
        expect(labels.some((l) => l.startsWith('attention-parallel-rope'))).toBe(true);
        expect(labels).not.toContain('rope-kv-store');
      } finally {
        await engine.dispose();
      }
    });
  }
});

function asLlama(arch: string) {
  return (m: Metadata): Metadata =>
    m.map(([k, v]) => (k === 'general.architecture' ? [k, 'llama'] : [k.startsWith(`${arch}.`) ? `llama.${k.slice(arch.length + 1)}` : k, v]));
}

const CASES: Case[] = [
  {
    preset: 'qwen2-tiny',
    init: INIT,
    prompts: [[496, 57, 118], [93, 154, 215, 276], [190, 251, 312, 373, 434]],
    // 2 layers × LAYER, as llama: the Q/K/V biases are added inside the stacked QKV product.
    dispatches: 1 + 2 * LAYER + HEAD,
    cpuDispatches: 1 + 2 * (LAYER - 1) + HEAD,
    control: { what: 'run as llama (no biases, adjacent-pair RoPE)', edit: asLlama('qwen2') },
  },
  {
    preset: 'qwen3-tiny',
    init: INIT,
    prompts: [[496, 57, 118], [93, 154, 215, 276], [190, 251, 312, 373, 434]],
    // One more per layer: the per-head Q/K norm, in place, one dispatch for both (so no RoPE tail).
    dispatches: 1 + 2 * (LAYER + 1) + HEAD,
    control: { what: 'run as llama (no Q/K norms, adjacent-pair RoPE)', edit: asLlama('qwen3') },
  },
  {
    preset: 'phi3-tiny',
    init: INIT,
    prompts: [[496, 57, 118], [93, 154, 215, 276], [190, 251, 312, 373, 434]],
    // No RoPE tail: 12 of 16 dimensions rotated in NeoX order are not whole vec4 halves.
    dispatches: 1 + 2 * LAYER + HEAD,
    control: {
      what: 'full instead of partial rotary',
      edit: (m) => m.map(([k, v]) => [k, k === 'phi3.rope.dimension_count' ? gv.u32(PRESETS['phi3-tiny'].headDim) : v]),
    },
  },
  {
    preset: 'gemma-tiny',
    // Gemma multiplies embeddings by sqrt(dim) = 8 on the way in; a smaller table keeps the current
    // token's own embedding from dominating the tied output (which makes greedy repeat it).
    init: { ...INIT, embeddingStd: 0.2 },
    prompts: [[93, 154, 215, 276], [399, 460, 21, 82, 143, 204, 265], [78, 139, 200, 261]],
    dispatches: 1 + 2 * LAYER + HEAD,
    cpuDispatches: 1 + 2 * (LAYER - 1) + HEAD,
    control: { what: 'run as llama (no embedding scale, SiLU, adjacent-pair RoPE)', edit: asLlama('gemma') },
  },
];

let llama: Llama;
let dir: string;
beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  dir = mkdtempSync(join(tmpdir(), 'svc-arch-'));
});
afterAll(async () => {
  await llama?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Metadata = [string, GgufWriteValue][];

/** The synthesized (F32) model with its metadata edited, some tensors left out, and some stored as another type. */
function edited(m: SynthModel, edit: (x: Metadata) => Metadata = (x) => x, drop: (t: GgufTensorSpec) => boolean = () => false, retype: (t: GgufTensorSpec) => GgmlType | undefined = () => undefined) {
  const index = new Map(m.spec.tensors.map((t, i) => [t.name, i]));
  const tensors = m.spec.tensors.filter((t) => !drop(t)).map((t) => ({ ...t, type: retype(t) ?? t.type }));
  const spec = { ...m.spec, tensors, metadata: edit([...(m.spec.metadata as Iterable<[string, GgufWriteValue]>)]) };
  const data = (t: GgufTensorSpec): Iterable<Uint8Array> => {
    const original = m.spec.tensors[index.get(t.name)!];
    const chunks = m.tensorData(original, index.get(t.name)!);
    if (t.type === original.type) return chunks;
    const bytes = Buffer.concat([...chunks]);
    return [quantize(t.type, new Float32Array(new Uint8Array(bytes).buffer))];
  };
  return { spec, data };
}

async function modelBytes(m: ReturnType<typeof edited>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  await writeGguf({ write: (c: Uint8Array) => chunks.push(c.slice()) }, m.spec, m.data);
  return Buffer.concat(chunks);
}

async function loadBytes(bytes: Uint8Array, name: string): Promise<WebGpuEngine> {
  const selected = await openNodeDevice();
  try {
    return await WebGpuEngine.load(selected, new BytesSource(bytes, name), { contextLength: 256, maxSequences: 2 });
  } catch (e) {
    selected.device.destroy();
    throw e;
  }
}

for (const c of CASES) {
  const preset: ModelPreset = { ...PRESETS[c.preset], init: c.init };
  describe(`${c.preset} (${preset.architecture}) agrees with llama.cpp`, () => {
    const synth = synthModel(preset, 'f32', 1, c.preset);
    let path: string;
    let refs: LlamaCppReference[];
    let engine: WebGpuEngine;
    beforeAll(async () => {
      path = join(dir, `${c.preset}.gguf`);
      await writeFileAtomically(path, (sink) => writeGguf(sink, synth.spec, synth.tensorData));
      refs = await llamaCppReference(llama, path, c.prompts, preset.vocab, STEPS);
      engine = await loadEngine({ model: path, contextLength: 256, maxSequences: 2 });
    });
    afterAll(() => engine?.dispose());

    it(`greedy tokens are llama.cpp's for ${STEPS} tokens on ${c.prompts.length} prompts, next-token probabilities within ${PROB_TOLERANCE}`, async () => {
      expect(engine.config.architecture).toBe(preset.architecture);
      // Heads of key_length wide, not dim / heads (qwen3: 32 on dim 64; gemma likewise).
      expect(engine.config.headDim).toBe(preset.headDim);
      for (const ref of refs) {
        expect(ref.greedy, `llama.cpp stopped early on ${JSON.stringify(ref.prompt)}`).toHaveLength(STEPS);
        expect(smallestGap(ref), `prompt ${JSON.stringify(ref.prompt)} has a near-tie in llama.cpp; choose another`).toBeGreaterThan(MIN_GAP);
        const ours = await engine.generate({ tokens: ref.prompt, maxTokens: STEPS, temperature: 0, stopAtEndOfGeneration: false }).result;
        expect(ours.tokens, `prompt ${JSON.stringify(ref.prompt)}`).toEqual(ref.greedy);
        expect(await largestProbDifference(engine, ref)).toBeLessThan(PROB_TOLERANCE);
      }
    });

    it(`a decode step is ${c.dispatches} dispatches (${c.cpuDispatches ?? c.dispatches} on llvmpipe)`, async () => {
      await engine.generate({ tokens: c.prompts[0], maxTokens: 3, temperature: 0, stopAtEndOfGeneration: false }).result;
      expect(engine.stats().lastStepDispatches).toBe(tailsOn(engine) ? (c.cpuDispatches ?? c.dispatches) : c.dispatches);
    });

    it(`control: ${c.control.what} disagrees with llama.cpp`, async () => {
      const wrong = await loadBytes(await modelBytes(edited(synth, c.control.edit)), `${c.preset}-control.gguf`);
      try {
        let worst = 0;
        for (const ref of refs) worst = Math.max(worst, await largestProbDifference(wrong, ref));
        expect(worst).toBeGreaterThan(20 * PROB_TOLERANCE);
      } finally {
        await wrong.dispose();
      }
    });
  });
}

describe('qwen2 with Q/K/V of different types (attn_v in F16, as Q4_K_M files keep attn_v at higher precision)', () => {
  it('runs three products, each adding its own bias, and still agrees with llama.cpp', async () => {
    const preset: ModelPreset = { ...PRESETS['qwen2-tiny'], init: INIT };
    const mixed = edited(synthModel(preset, 'f32', 1, 'qwen2-tiny'), undefined, undefined, (t) => (t.name.endsWith('attn_v.weight') ? GgmlType.F16 : undefined));
    const path = join(dir, 'qwen2-mixed.gguf');
    await writeFileAtomically(path, (sink) => writeGguf(sink, mixed.spec, mixed.data));
    const prompts = [[496, 57, 118], [93, 154, 215, 276]];
    const refs = await llamaCppReference(llama, path, prompts, preset.vocab, STEPS);
    const engine = await loadEngine({ model: path, contextLength: 256, maxSequences: 2 });
    try {
      // Unstacked: 2 layers × (q, k, v separately) adds 2 dispatches per layer to llama's LAYER.
      await engine.generate({ tokens: prompts[0], maxTokens: 2, temperature: 0, stopAtEndOfGeneration: false }).result;
      expect(engine.stats().lastStepDispatches).toBe(1 + 2 * (LAYER + 2) + HEAD);
      for (const ref of refs) {
        expect(smallestGap(ref)).toBeGreaterThan(MIN_GAP);
        const ours = await engine.generate({ tokens: ref.prompt, maxTokens: STEPS, temperature: 0, stopAtEndOfGeneration: false }).result;
        expect(ours.tokens).toEqual(ref.greedy);
        expect(await largestProbDifference(engine, ref)).toBeLessThan(PROB_TOLERANCE);
      }
    } finally {
      await engine.dispose();
    }
  });
});

/**
 * Dispatches of a decode step of these 2-layer models on llvmpipe, whose layers without tails would
 * take `perLayer`: there the O and gate|up products run the pass after them (the FFN norm, the
 * activation) in their last invocations, a stacked QKV product RoPE + KV store (`stackedQkv`), and the
 * first layer's down product the second layer's norm (kernels/matvec-tail.ts).
 */
const withTails = (perLayer: number, stackedQkv: boolean) => 1 + 2 * (perLayer - 2 - (stackedQkv ? 1 : 0)) - 1 + HEAD;
/** Their decode step's dispatches on a CPU adapter: with tails on llvmpipe, without on SwiftShader. */
const cpuStep = (engine: { stats(): { adapter: string } }, perLayer: number, stackedQkv: boolean) => (tailsOn(engine) ? withTails(perLayer, stackedQkv) : 1 + 2 * perLayer + HEAD);

/**
 * A model file whose block matrices read quantized x on CPU adapters against llama.cpp: a decode step's
 * dispatches there, then greedy tokens and next-token probabilities along each prompt's path.
 */
async function expectQuantizedParity(path: string, prompts: number[][], vocab: number, perLayer: number, stackedQkv: boolean): Promise<void> {
  const refs = await llamaCppReference(llama, path, prompts, vocab, STEPS);
  // These random-weight models amplify rounding (activation rounding alone moves their logits by
  // percents), so they are held to llama.cpp's f32 KV cache with ours in f32 too: with the CPU's default
  // f16 cache their next-token probabilities differed by 0.06-0.13 from llama.cpp's, with its f16 cache as
  // with its f32 one (kv-format.test.ts checks the f16 path on stories260K against llama.cpp's default).
  const engine = await loadEngine({ model: path, contextLength: 256, maxSequences: 2, kvCache: 'f32' });
  try {
    await engine.generate({ tokens: prompts[0], maxTokens: 2, temperature: 0, stopAtEndOfGeneration: false }).result;
    // Layers chained on llvmpipe (engine/model/layer-chains.ts) take two fewer for the FFN, one for Q|K|V with attention.
    const chained = engine.stats().chains;
    if (['llvmpipe', 'swiftshader'].includes(engine.stats().adapter)) expect(engine.stats().lastStepDispatches).toBe(cpuStep(engine, perLayer, stackedQkv) - 2 * chained.ffnLayers - chained.qkvLayers);
    for (const ref of refs) {
      expect(smallestGap(ref), `prompt ${JSON.stringify(ref.prompt)} has a near-tie in llama.cpp; choose another`).toBeGreaterThan(MIN_GAP);
      const ours = await engine.generate({ tokens: ref.prompt, maxTokens: STEPS, temperature: 0, stopAtEndOfGeneration: false }).result;
      expect(ours.tokens, `prompt ${JSON.stringify(ref.prompt)}`).toEqual(ref.greedy);
      expect(await largestProbDifference(engine, ref)).toBeLessThan(quantizedTolerance(engine));
    }
  } finally {
    await engine.dispose();
  }
}

describe.each([
  ['q8_0', 16],
  ['q4_0', 16],
  ['q8_0', 32],
] as const)('llama with %s block matrices (heads of %i) agrees with llama.cpp', (type, headDim) => {
  // On CPU adapters these products read x quantized to int8 blocks, as llama.cpp's CPU backend does for
  // these types: the norms and the activation write it (one more pass a layer than LAYER: the
  // activation's own); so does attention where heads are whole 32-value blocks, else a quantize pass
  // before the O product (one more).
  it('greedy tokens are llama.cpp\'s, next-token probabilities close, through the quantized-x kernels', async () => {
    const preset: ModelPreset = { ...PRESETS.tiny, headDim, init: INIT };
    const name = `tiny-${type}-hd${headDim}`;
    const synth = synthModel(preset, type, 1, name);
    const path = join(dir, `${name}.gguf`);
    await writeFileAtomically(path, (sink) => writeGguf(sink, synth.spec, synth.tensorData));
    // Chosen for large gaps on llama.cpp's path (0.27+ for Q8_0, 0.12+ for Q4_0, 0.11+ for Q8_0 with heads
    // of 32, the best of 24 random prompts): activation rounding moves logits more than f32 arithmetic
    // does, and SwiftShader's more than llvmpipe's (a Q4_0 prompt with a 0.14 gap left llama.cpp's tokens
    // after several steps there, not on llvmpipe).
    const chosen: Record<string, number[][]> = {
      'q8_0/16': [[311, 408, 5, 102], [457, 54, 151, 248, 345, 442], [177, 274, 371, 468, 65, 162]],
      'q4_0/16': [[396, 493, 90, 187, 284], [6, 103, 200], [384, 481, 78, 175, 272]],
      'q8_0/32': [[271, 381, 422, 472, 90], [431, 102, 292, 258], [96, 45, 232]],
    };
    const prompts = chosen[`${type}/${headDim}`];
    await expectQuantizedParity(path, prompts, preset.vocab, LAYER + (headDim % 32 === 0 ? 1 : 2), true);
    // On the GPU kernels (SwiftShader as a GPU) the same products run in int8 (matvec-dp4a.wgsl for
    // decode, matmul-tiles-dp4a.wgsl for prefill), x quantized inside them as llama.cpp quantizes it.
    if (process.env.SVC_ADAPTER === 'swiftshader') return;
    const refs = await llamaCppReference(llama, path, prompts, preset.vocab, STEPS);
    const gpu = await gpuKernelsEngine(path, { contextLength: 256, maxSequences: 2, prefixCache: false });
    for (const ref of refs) {
      const ours = await gpu.generate({ tokens: ref.prompt, maxTokens: STEPS, temperature: 0, stopAtEndOfGeneration: false }).result;
      expect(ours.tokens, `GPU kernels, prompt ${JSON.stringify(ref.prompt)}`).toEqual(ref.greedy);
      expect(await largestProbDifference(gpu, ref)).toBeLessThan(PROB_TOLERANCE_QUANTIZED_SWIFTSHADER);
    }
    const step = await gpu.profileLastStep({ tokens: prompts[0], maxTokens: 2, temperature: 0, stopAtEndOfGeneration: false });
    expect(step.kernels.filter((k) => k.label.startsWith('matvec-')).every((k) => k.label.startsWith(`matvec-dp4a-${type.toUpperCase()}-`))).toBe(true);
  });
});

describe('llama Q8_0 with one KV head of 12: stacked Q|K|V rows straddle the CPU layout\'s 8-row groups', () => {
  // 8 query heads of 12 are 96 rows, then 12 K rows and 12 V rows: on CPU rasterisers, where Q8_0 rows go
  // in groups of 8 (kernels/quant/layouts.ts), the group of rows 104..111 holds K's last four and V's first
  // four, which the loader takes from two tensors into one repack. Probabilities are compared along
  // llama.cpp's greedy path (no near-tie can flip a token here), at the quantized-x tolerance.
  it('next-token probabilities stay close to llama.cpp\'s', async () => {
    const preset: ModelPreset = { ...PRESETS.tiny, heads: 8, headDim: 12, kvHeads: 1, init: INIT };
    const name = 'tiny-q8_0-hd12-kv1';
    const synth = synthModel(preset, 'q8_0', 1, name);
    const path = join(dir, `${name}.gguf`);
    await writeFileAtomically(path, (sink) => writeGguf(sink, synth.spec, synth.tensorData));
    const refs = await llamaCppReference(llama, path, [[311, 408, 5, 102], [457, 54, 151, 248, 345]], preset.vocab, 12);
    const engine = await loadEngine({ model: path, contextLength: 256, maxSequences: 2, kvCache: 'f32' });
    try {
      for (const ref of refs) expect(await largestProbDifference(engine, ref)).toBeLessThan(quantizedTolerance(engine));
    } finally {
      await engine.dispose();
    }
  });
});

describe('llama with K-quant block matrices (Q4_K, and Q6_K for attn_v and ffn_down as in Q4_K_M files) agrees with llama.cpp', () => {
  // Q4_K rows are whole 256-element blocks: the tiny shape widened. x for these products is quantized as
  // llama.cpp's Q8_K (256 values to an f32 scale); with 32-value blocks and f16 scales instead, or with
  // f32 x, next-token probabilities here differed from llama.cpp's by 0.5-0.7.
  const preset: ModelPreset = { ...PRESETS.tiny, dim: 256, headDim: 64, ffn: 512, init: INIT };
  let written: Promise<string> | undefined;
  const modelFile = () =>
    (written ??= (async () => {
      const matrix = (t: GgufTensorSpec) => t.name.startsWith('blk.') && t.name.endsWith('.weight') && t.dims.length === 2;
      const kQuant = (t: GgufTensorSpec) => (!matrix(t) ? undefined : /attn_v|ffn_down/.test(t.name) ? GgmlType.Q6_K : GgmlType.Q4_K);
      const model = edited(synthModel(preset, 'f32', 1, 'tiny-q4_k'), undefined, undefined, kQuant);
      const path = join(dir, 'tiny-q4_k.gguf');
      await writeFileAtomically(path, (sink) => writeGguf(sink, model.spec, model.data));
      return path;
    })());

  it('greedy tokens are llama.cpp\'s, next-token probabilities close, through the quantized-x kernels', async () => {
    // Chosen for large gaps (0.31+) on llama.cpp's path, as for the types above.
    const prompts = [[164, 261, 358, 455, 52], [250, 347, 444], [116, 213, 310, 407, 504]];
    // Q, K and V of two types are three products (2 more a layer, and no RoPE tail), plus the activation
    // and O's quantize pass.
    await expectQuantizedParity(await modelFile(), prompts, preset.vocab, LAYER + 4, false);
  });

  // On the GPU kernels (SwiftShader as a GPU) both types run in int8, and a step of more than 8 tokens
  // goes through the prefill tile: Q6_K's block halves scaled apart (HALVES in matmul-tiles-dp4a.wgsl).
  // Their 32-value x blocks are not llama.cpp's CPU Q8_K, which this model amplifies (above), so the tile
  // is held to the decode kernels instead, which quantize x the same way (logits in steps of 2 tokens:
  // maxSequences 2 keeps the kernels this engine compiles few). Once per test run: the SwiftShader pass
  // of the suite skips it.
  it.skipIf(process.env.SVC_ADAPTER === 'swiftshader')('on the GPU kernels, a 12-token prompt in one step (the int8 prefill tile, Q6_K too) gives the first token its steps of 2 give (the decode kernels)', async () => {
    const long = [52, 290, 194, 8, 276, 37, 312, 203, 13, 61, 96, 494];
    const gpu = await gpuKernelsEngine(await modelFile(), { contextLength: 256, maxSequences: 2, prefixCache: false });
    try {
      const tiled = await greedyRun(gpu, long, 1);
      const step = await gpu.profileLastStep({ tokens: long, maxTokens: 1, temperature: 0, stopAtEndOfGeneration: false });
      expect(step.kernels.map((k) => k.label)).toEqual(expect.arrayContaining([expect.stringMatching(/^matmul-tiles-dp4a-Q6_K/), expect.stringMatching(/^matmul-tiles-dp4a-Q4_K/)]));
      const last = (await gpu.logits(long, { stepTokens: 2 })).at(-1)!;
      const p = softmax(last);
      expect(tiled.tokens[0]).toBe(p.indexOf(Math.max(...p)));
      // 2e-6 seen; Q6_K with one scale a block gives another token.
      expect(Math.abs(tiled.logprobs[0] - Math.log(p[tiled.tokens[0]]))).toBeLessThan(1e-4);
    } finally {
      await gpu.dispose();
    }
  });
});

describe('llama keeps its dispatch count', () => {
  it(`stories260K: a decode step is ${1 + 5 * LAYER + HEAD} dispatches (embedding + 5 layers × ${LAYER} + head; ${LAYER - 1} a layer on llvmpipe)`, async () => {
    const engine = await loadEngine({ model: sharedModel('stories260K.gguf'), contextLength: 256, maxSequences: 2 });
    try {
      await engine.generate({ prompt: 'Once upon a time', maxTokens: 3, temperature: 0 }).result;
      expect(engine.stats().lastStepDispatches).toBe(1 + 5 * (tailsOn(engine) ? LAYER - 1 : LAYER) + HEAD);
    } finally {
      await engine.dispose();
    }
  });
});

describe('architecture errors name what is wrong', () => {
  const model = (name: keyof typeof PRESETS) => synthModel(PRESETS[name], 'f32', 1, name);
  const without = (name: keyof typeof PRESETS, tensor: string) => modelBytes(edited(model(name), undefined, (t) => t.name === tensor));

  it('qwen2 without a Q/K/V bias names the missing tensor', async () => {
    await expect(loadBytes(await without('qwen2-tiny', 'blk.1.attn_k.bias'), 'qwen2.gguf')).rejects.toThrow(/tensor "blk\.1\.attn_k\.bias" is missing \(architecture qwen2\)/);
  });

  it('qwen3 without a per-head norm names the missing tensor', async () => {
    await expect(loadBytes(await without('qwen3-tiny', 'blk.0.attn_q_norm.weight'), 'qwen3.gguf')).rejects.toThrow(/tensor "blk\.0\.attn_q_norm\.weight" is missing \(architecture qwen3\)/);
  });

  it('phi3 with separate Q/K/V names the fused tensor it needs', async () => {
    // A llama-layout file declared phi3: its tensors are attn_q/k/v and ffn_gate/up, not the fused pair.
    const llamaLayout = edited(synthModel({ ...PRESETS['qwen3-tiny'], architecture: 'llama', headDim: 16 }, 'f32', 1), (m) => [
      ...m.map(([k, v]): [string, GgufWriteValue] => (k === 'general.architecture' ? [k, 'phi3'] : [k.replace(/^llama\./, 'phi3.'), v])),
    ]);
    await expect(loadBytes(await modelBytes(llamaLayout), 'phi3.gguf')).rejects.toThrow(/tensor "blk\.0\.attn_qkv\.weight" is missing \(architecture phi3\)/);
  });

  it('phi3 LongRoPE files are refused, naming the tensor', async () => {
    const m = model('phi3-tiny');
    const spec = { ...m.spec, tensors: [...m.spec.tensors, { name: 'rope_factors_long.weight', dims: [6], type: m.spec.tensors.find((t) => t.name === 'output_norm.weight')!.type }] };
    const chunks: Uint8Array[] = [];
    await writeGguf({ write: (c: Uint8Array) => chunks.push(c.slice()) }, spec, (t, i) => (i < m.spec.tensors.length ? m.tensorData(t, i) : new Uint8Array(24)));
    await expect(loadBytes(Buffer.concat(chunks), 'phi3-long.gguf')).rejects.toThrow(/phi3: tensor "rope_factors_long\.weight" \(LongRoPE/);
  });
});
