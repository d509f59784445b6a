/**
 * The trainer on synthesized llama-family files with what the shared models lack: Llama 3 RoPE frequency
 * factors with Q4_0 weights and a separate head, partial rotary with F16 weights and a tied head. Its loss
 * at B = 0 must equal the engine's and its gradient the finite differences of its loss; other
 * architectures are refused by name. The first has a vocabulary large enough for the output head to be
 * taken a slice at a time.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { synthModel, type SynthType } from '../../bench/synth/model.ts';
import { PRESETS, type ModelPreset } from '../../bench/synth/presets.ts';
import { WebGpuEngine } from '../../engine/engine.ts';
import { writeGguf } from '../../engine/gguf/write.ts';
import { BytesSource } from '../../engine/loader/source.ts';
import { LORA_TARGETS } from '../../engine/lora/adapter-file.ts';
import { openNodeDevice } from '../../engine/platform/node.ts';
import { createLoraTrainer } from '../../engine/train/gpu/index.ts';
import type { TrainingExample } from '../../engine/train/types.ts';

const engines: WebGpuEngine[] = [];
afterAll(async () => {
  for (const e of engines) await e.dispose();
});

async function load(preset: ModelPreset, type: SynthType, name: string): Promise<WebGpuEngine> {
  const m = synthModel(preset, type, 3, name);
  const chunks: Uint8Array[] = [];
  await writeGguf({ write: (c: Uint8Array) => void chunks.push(c.slice()) }, m.spec, m.tensorData);
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  const selected = await openNodeDevice();
  // The trainer's attention reads f32 K and V: so does the engine here (the CPU adapters' default cache
  // is half precision, kernels/kv-format.ts, which moved the first case's loss by 1e-3 of itself).
  const engine = await WebGpuEngine.load(selected, new BytesSource(bytes, `${name}.gguf`), { contextLength: 256, maxSequences: 2, kvCache: 'f32' });
  engines.push(engine);
  return engine;
}

const INIT = { matrixStd: 0.25, embeddingStd: 0.5, outputStd: 0.25, normJitter: 0.2 };
const tiny: ModelPreset = { ...PRESETS['qwen2-tiny'], architecture: 'llama', ropeBase: 10000, init: INIT };

function example(tokens: number[], from: number): TrainingExample {
  const lossMask = new Uint8Array(tokens.length);
  for (let t = from; t < tokens.length - 1; t++) lossMask[t] = 1;
  return { tokens: Int32Array.from(tokens), lossMask };
}

async function engineLoss(engine: WebGpuEngine, ex: TrainingExample): Promise<number> {
  const tokens = Array.from(ex.tokens);
  const logits = await engine.logits(tokens);
  let sum = 0;
  let n = 0;
  for (let t = 0; t < tokens.length - 1; t++) {
    if (!ex.lossMask[t]) continue;
    const row = logits[t];
    const m = row.reduce((a, b) => Math.max(a, b), -Infinity);
    sum += m + Math.log(row.reduce((z, v) => z + Math.exp(v - m), 0)) - row[tokens[t + 1]];
    n++;
  }
  return sum / n;
}

const cases: { name: string; preset: ModelPreset; type: SynthType; check: (e: WebGpuEngine) => void }[] = [
  {
    // A vocabulary of 4000: the head goes through in 6 slices, the last of 160 rows (TrainProgram.headSlice).
    name: 'Llama 3 RoPE factors, Q4_0, separate head',
    preset: { ...tiny, vocab: 4000, ropeScaling: { factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 32 } },
    type: 'q4_0',
    check: (e) => expect(e.config.tiedEmbeddings).toBe(false),
  },
  {
    name: 'partial rotary (12 of 16), F16, tied head',
    preset: { ...tiny, ropeDims: 12, tiedEmbeddings: true },
    type: 'f16',
    check: (e) => expect([e.config.rope.nRot, e.config.tiedEmbeddings]).toEqual([12, true]),
  },
];

describe('LoRA trainer on synthesized llama-family models', () => {
  for (const c of cases) {
    it(`${c.name}: loss at B = 0 is the engine's; the gradient is the loss's derivative`, async () => {
      const engine = await load(c.preset, c.type, c.name.split(',')[0].replace(/\W+/g, '-'));
      c.check(engine);
      const tokens = Array.from({ length: 40 }, (_, i) => (i * 37 + 11) % 500);
      const ex = example(tokens, 10);
      const trainer = await createLoraTrainer(engine, { rank: 4, alpha: 4, targets: LORA_TARGETS }, { seed: 8, optimizer: { clipNorm: 0 } });
      try {
        const base = await trainer.evaluate([ex]);
        const want = await engineLoss(engine, ex);
        // On CPU adapters the engine's Q8_0/Q4_0 products read x quantized to int8 as llama.cpp's do
        // (kernels/README.md); the trainer computes in f32. That moved this loss by 6e-4 of itself.
        const int8X = (c.type === 'q4_0' || c.type === 'q8_0') && ['llvmpipe', 'swiftshader'].includes(engine.stats().adapter);
        expect(Math.abs(base.loss - want)).toBeLessThan((int8X ? 2e-3 : 2e-4) * Math.max(1, want));
        await trainer.step([ex], 2e-2);
        const state = await trainer.saveState();
        await trainer.step([ex], 0);
        const grads = await trainer.readGradients();
        const headerBytes = new DataView(state.buffer).getUint32(8, true);
        // The largest gradients of q's A (RoPE in its backward path) and of the last layer's down B.
        const q = trainer.layout.find(1, 'q')!;
        const down = trainer.layout.find(1, 'down')!;
        const largest = (off: number, len: number) => {
          let best = off;
          for (let i = off; i < off + len; i++) if (Math.abs(grads[i]) > Math.abs(grads[best])) best = i;
          return best;
        };
        for (const i of [largest(q.aOffset, 4 * q.inDim), largest(down.bOffset, 4 * down.outDim)]) {
          const loss = async (delta: number) => {
            const s = state.slice();
            new Float32Array(s.buffer, 12 + headerBytes)[i] += delta;
            await trainer.loadState(s);
            return (await trainer.evaluate([ex])).loss;
          };
          const h = 1e-2;
          const fd = ((await loss(h)) - (await loss(-h))) / (2 * h);
          expect(Math.abs(fd - grads[i]), `parameter ${i}: finite difference ${fd}, gradient ${grads[i]}`).toBeLessThan(0.02 * Math.abs(grads[i]) + 1e-4);
        }
      } finally {
        trainer.destroy();
      }
    });
  }

  it('refuses architectures whose blocks differ from llama, naming the difference', async () => {
    const qwen2 = await load({ ...PRESETS['qwen2-tiny'], init: INIT }, 'f32', 'qwen2-tiny');
    await expect(createLoraTrainer(qwen2, { rank: 2, alpha: 2, targets: ['q'] }, { seed: 1 })).rejects.toThrow(/LoRA training supports llama-style blocks; qwen2 has Q\/K\/V biases/);
    const phi3 = await load({ ...PRESETS['phi3-tiny'], init: INIT }, 'f32', 'phi3-tiny');
    await expect(createLoraTrainer(phi3, { rank: 2, alpha: 2, targets: ['q'] }, { seed: 1 })).rejects.toThrow(/phi3 has a fused QKV matrix, a fused gate\/up matrix/);
  });
});
