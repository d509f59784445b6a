/**
 * Layer chains (engine/model/layer-chains.ts, EngineOptions.productChains): on llvmpipe with its threads
 * pinned, a decode step runs each layer's O, gate|up and down products in one dispatch of persistent
 * workgroups, and its Q|K|V product with attention in another (split over positions past 128 or not). The engine must generate exactly what it generates with a dispatch a product (tokens and
 * log-probabilities to the bit), alone and with sequences decoding together, in three dispatches fewer a
 * chained layer; and where a chain's barrier gives up (here: told to wait almost not at all), the step
 * runs again unchained, with the same outputs. A synthesized Q8_0 model whose heads are whole 32-value
 * blocks takes the quantized attention output the chain starts from (the shared test models' heads are
 * 16 wide).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthModel } from '../../bench/synth/model.ts';
import { PRESETS, type ModelPreset } from '../../bench/synth/presets.ts';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { writeGguf } from '../../engine/gguf/write.ts';
import { writeFileAtomically } from '../../engine/loader/file-sink-node.ts';
import { loadEngine } from '../../engine/node.ts';
import { greedyRun } from '../helpers/engine.ts';
import { testContext } from '../helpers/gpu.ts';
import { llvmpipePoolSize } from '../../engine/platform/worker-pinning.ts';

const caps = (await testContext()).caps;
// Chains run where tails do (atomics that order stores: llvmpipe), with weights in textures.
const applies = caps.orderedAtomics && caps.weightTextures;
const LAYERS = 4;
const PRESET: ModelPreset = {
  ...PRESETS.tiny,
  displayName: 'Tiny test model, 32-wide heads',
  layers: LAYERS,
  dim: 128,
  heads: 4,
  kvHeads: 2,
  headDim: 32,
  ffn: 256,
  // Weights large enough that the blocks, not the token's embedding, pick the next token.
  init: { matrixStd: 0.25, embeddingStd: 0.5, outputStd: 0.25, normJitter: 0.2 },
};
const PROMPTS = [
  [3, 101, 57, 300, 12],
  [3, 44, 7, 211, 90, 18, 400],
  [3, 250, 9],
];
const STEPS = 24;

describe.skipIf(!applies)('FFN chains', () => {
  let dir: string;
  let path: string;
  const engines: WebGpuEngine[] = [];
  const open = async (opts: { productChains?: boolean; chainWaitPasses?: number; chainWorkgroups?: number }) => {
    const e = await loadEngine({ model: path, contextLength: 256, maxSequences: 4, prefixCache: false, grammars: 'in-process', ...opts });
    engines.push(e);
    return e;
  };
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-chains-'));
    path = join(dir, 'tiny-q8.gguf');
    const synth = synthModel(PRESET, 'q8_0', 7, 'tiny-heads32');
    await writeFileAtomically(path, (sink) => writeGguf(sink, synth.spec, synth.tensorData));
  });
  afterAll(async () => {
    for (const e of engines.splice(0)) await e.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const chainsOf = (e: WebGpuEngine) => e.stats().chains;

  it('chains by default exactly where the engine pinned llvmpipe\'s threads', async () => {
    const e = await open({});
    // Pinning can fail on a busy machine (a burst that misses a worker): then no chain, by design.
    const pinned = /pinned one to a CPU/.test(e.stats().workerThreads ?? '');
    expect(chainsOf(e).ffnLayers).toBe(pinned ? LAYERS - 1 : 0);
    expect(chainsOf(e).qkvLayers).toBe(pinned ? LAYERS : 0);
  });

  it('chain every layer but the last, two dispatches fewer each, and give the bits of a dispatch a product', async () => {
    // One workgroup to each of llvmpipe's threads, pinned or not (a test run may have missed pinning).
    const on = await open({ chainWorkgroups: llvmpipePoolSize() });
    const off = await open({ productChains: false });
    expect(chainsOf(on).ffnLayers).toBe(LAYERS - 1);
    expect(chainsOf(on).qkvLayers).toBe(LAYERS);
    expect(chainsOf(off).ffnLayers + chainsOf(off).qkvLayers).toBe(0);
    for (const p of PROMPTS) {
      const [a, b] = [await greedyRun(on, p, STEPS), await greedyRun(off, p, STEPS)];
      expect(a.tokens).toHaveLength(STEPS);
      expect(a.tokens).toEqual(b.tokens);
      expect(a.logprobs).toEqual(b.logprobs);
    }
    // Not one token over and over: the outputs say something about the products.
    expect(new Set((await greedyRun(off, PROMPTS[0], STEPS)).tokens).size).toBeGreaterThan(3);
    // Unless a step had to run again (its barrier gave up: threads sharing a CPU), it took the chains.
    if (chainsOf(on).retries === 0) expect(off.stats().lastStepDispatches - on.stats().lastStepDispatches).toBe(2 * (LAYERS - 1) + LAYERS);

    // Three sequences decoding together: steps of 3 rows of x, the most the chains take.
    const [ra, rb] = await Promise.all([Promise.all(PROMPTS.map((p) => greedyRun(on, p, STEPS))), Promise.all(PROMPTS.map((p) => greedyRun(off, p, STEPS)))]);
    for (let i = 0; i < PROMPTS.length; i++) {
      expect(ra[i].tokens).toEqual(rb[i].tokens);
      expect(ra[i].logprobs).toEqual(rb[i].logprobs);
    }
  });

  it('past 128 positions, where decode attention splits its positions, the split chain gives the same bits', async () => {
    const on = await open({ chainWorkgroups: llvmpipePoolSize() });
    const off = await open({ productChains: false });
    // 140 prompt tokens: every decode step's span passes SERIAL_SPLIT_FROM, so attention runs split.
    const long = Array.from({ length: 140 }, (_, i) => 3 + ((i * 37 + 11) % 500));
    const [a, b] = [await greedyRun(on, long, 12), await greedyRun(off, long, 12)];
    expect(a.tokens).toEqual(b.tokens);
    expect(a.logprobs).toEqual(b.logprobs);
    if (chainsOf(on).retries === 0) expect(off.stats().lastStepDispatches - on.stats().lastStepDispatches).toBe(2 * (LAYERS - 1) + LAYERS);
  });

  it('a step whose barrier gives up runs again unchained, with the same outputs', async () => {
    const off = await open({ productChains: false });
    // One pass of waiting: the other thread is rarely there yet, so barriers give up. And one workgroup
    // more than the threads: the last starts only once another ends, so every barrier gives up, the
    // products overlap, and their tails' counters are left mid-count for the run again to clear.
    const cases = [
      { opts: { chainWaitPasses: 1, chainWorkgroups: llvmpipePoolSize() }, alwaysFails: false },
      { opts: { chainWaitPasses: 64, chainWorkgroups: llvmpipePoolSize() + 1 }, alwaysFails: true },
    ];
    for (const { opts, alwaysFails } of cases) {
      const impatient = await open(opts);
      for (const p of PROMPTS) {
        const [a, b] = [await greedyRun(impatient, p, STEPS), await greedyRun(off, p, STEPS)];
        expect(a.tokens).toEqual(b.tokens);
        expect(a.logprobs).toEqual(b.logprobs);
      }
      // One pass of waiting fails only where the other thread is late (most steps, not all runs).
      if (alwaysFails) expect(chainsOf(impatient).retries).toBeGreaterThan(0);
    }
  });

  it('a decode step\'s profile times the chains as the step runs them, their barrier counts reset for each replay', async () => {
    const e = await open({ chainWorkgroups: llvmpipePoolSize() });
    const p = await e.profileLastStep({ tokens: PROMPTS[0], maxTokens: 4, temperature: 0, stopAtEndOfGeneration: false });
    const chains = p.kernels.filter((k) => k.label.startsWith('ffn-chain-') || k.label.startsWith('qkv-chain-'));
    expect(chains.map((k) => k.dispatches).sort()).toEqual([LAYERS - 1, LAYERS].sort());
    expect(chains.every((k) => k.ms > 0)).toBe(true);
  });

  it('pipelined decode takes no chain', async () => {
    const e = await open({ chainWorkgroups: llvmpipePoolSize() });
    e.setPipelinedDecode(true);
    const off = await open({ productChains: false });
    off.setPipelinedDecode(true);
    const [a, b] = [await greedyRun(e, PROMPTS[1], STEPS), await greedyRun(off, PROMPTS[1], STEPS)];
    expect(a.tokens).toEqual(b.tokens);
    expect(e.stats().lastStepDispatches).toBe(off.stats().lastStepDispatches);
  });
});
