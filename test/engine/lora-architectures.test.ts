/**
 * LoRA on the architectures beside llama: qwen2 (Q/K/V biases), qwen3 (per-head Q/K norms after the
 * adapted products, heads wider than dim / heads) and gemma (GeGLU, one KV head) take adapters with the
 * same tensor names, and our next-token probabilities with a random adapter of every target match
 * llama.cpp's (node-llama-cpp, CPU, F32 KV cache) on test-sized synthesized models. phi3 fuses Q/K/V and
 * gate|up into single matrices, which no target names: its adapters are refused, saying why.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthModel } from '../../bench/synth/model.ts';
import { PRESETS, type ModelPreset, type SynthInit } from '../../bench/synth/presets.ts';
import { writeGguf } from '../../engine/gguf/write.ts';
import { writeFileAtomically } from '../../engine/loader/file-sink-node.ts';
import { encodeLoraAdapter } from '../../engine/lora/adapter-file.ts';
import { loadEngine } from '../../engine/node.ts';
import { EngineInputError } from '../../engine/types.ts';
import { randomLoraSpec } from '../../scripts/fixtures/random-lora.ts';
import { softmax } from '../../bench/llama-oracle.ts';

/** As architectures.test.ts: the largest next-token probability difference from llama.cpp. */
const PROB_TOLERANCE = 5e-3;
const INIT: SynthInit = { matrixStd: 0.25, embeddingStd: 0.5, outputStd: 0.25, biasStd: 0.5, normJitter: 0.2 };
const TOKENS = [93, 154, 215, 276, 496, 57, 118, 190, 251, 312];

let llama: Llama;
let dir: string;
beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  dir = mkdtempSync(join(tmpdir(), 'svc-lora-arch-'));
});
afterAll(async () => {
  await llama?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** llama.cpp's next-token distribution after every token, with the adapter at `lora` applied. */
async function llamaCppProbs(model: string, lora: string, vocab: number): Promise<Float64Array[]> {
  const m = await llama.loadModel({ modelPath: model });
  try {
    const context = await m.createContext({ threads: 1, contextSize: 64, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32', lora: { adapters: [{ filePath: lora }] } });
    try {
      const want = { probabilities: true, options: { temperature: 1, topK: 0, topP: 1, minP: 0 } };
      const out = await context.getSequence().controlledEvaluate(TOKENS.map((t) => [t, { generateNext: want }]) as never);
      return out.map((o) => {
        const p = new Float64Array(vocab);
        for (const [t, v] of o!.next.probabilities!) p[Number(t)] = v;
        return p;
      });
    } finally {
      await context.dispose();
    }
  } finally {
    await m.dispose();
  }
}

function largestDifference(a: Float64Array[], b: Float64Array[]): number {
  let worst = 0;
  a.forEach((row, i) => row.forEach((v, t) => (worst = Math.max(worst, Math.abs(v - b[i][t])))));
  return worst;
}

async function writeModel(name: keyof typeof PRESETS): Promise<{ path: string; preset: ModelPreset }> {
  const preset: ModelPreset = { ...PRESETS[name], init: INIT };
  const synth = synthModel(preset, 'f32', 1, name);
  const path = join(dir, `${name}.gguf`);
  await writeFileAtomically(path, (sink) => writeGguf(sink, synth.spec, synth.tensorData));
  return { path, preset };
}

describe('LoRA on other architectures', () => {
  for (const name of ['qwen2-tiny', 'qwen3-tiny', 'gemma-tiny'] as const) {
    it(`${name}: next-token probabilities with an adapter of every target are llama.cpp's`, async () => {
      const { path, preset } = await writeModel(name);
      const engine = await loadEngine({ model: path, contextLength: 64, maxSequences: 2, grammars: 'in-process' });
      try {
        const spec = randomLoraSpec(engine.config, { rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 5, bScale: 0.3 });
        const lora = join(dir, `${name}-lora.gguf`);
        writeFileSync(lora, encodeLoraAdapter(spec));
        const ref = await llamaCppProbs(path, lora, preset.vocab);
        const h = await engine.loadAdapter(encodeLoraAdapter(spec));
        const ours = (await engine.logits(TOKENS, { adapter: h.id })).map(softmax);
        const base = (await engine.logits(TOKENS)).map(softmax);
        expect(largestDifference(ours, ref)).toBeLessThan(PROB_TOLERANCE);
        // The adapter moves the distribution far more than the tolerance.
        expect(largestDifference(base, ref)).toBeGreaterThan(20 * PROB_TOLERANCE);
      } finally {
        await engine.dispose();
      }
    });
  }

  it('phi3-tiny: adapters are refused, naming the fused matrices', async () => {
    const { path } = await writeModel('phi3-tiny');
    const engine = await loadEngine({ model: path, contextLength: 64, maxSequences: 2, grammars: 'in-process' });
    try {
      const spec = randomLoraSpec({ ...engine.config, block: { ...engine.config.block, fusedQkv: false, fusedGateUp: false } }, { rank: 2, alpha: 2, targets: ['o'], seed: 5 });
      const err = await engine.loadAdapter(encodeLoraAdapter(spec)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineInputError);
      expect((err as Error).message).toMatch(/architecture phi3 stores Q, K and V as one fused attn_qkv matrix/);
    } finally {
      await engine.dispose();
    }
  });
});
