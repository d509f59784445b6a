/**
 * Adapters made by our own trainer (engine/train/fine-tune.ts) run in llama.cpp as they run in our
 * engine: a short fine-tune on each test model, its adapter file given to node-llama-cpp's LoRA option
 * (CPU, F32 KV cache) and to engine.loadAdapter, and the next-token log-probabilities and greedy tokens
 * compared within the tolerances of lora-parity.test.ts. Live rather than recorded: the adapter is
 * whatever the trainer makes today. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { fineTune } from '../../engine/train/fine-tune.ts';
import type { FineTuneResult, FineTuneSettings, TrainingExample } from '../../engine/train/types.ts';
import { testEngine } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';

const TEXT = 'Once upon a time, there was a little girl named Lily. She loved to play outside.';
const REPLY = ' Label: happy. Label: happy.';
const F32_LOGPROB_TOL = 0.02;
const Q8_RELATIVE_TOL = 0.05;

let llama: Llama;
let dir: string;
beforeAll(async () => {
  if (!fineTune) return;
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  dir = mkdtempSync(join(tmpdir(), 'svc-lora-trained-'));
});
afterAll(async () => {
  await llama?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function logSoftmax(logits: Float32Array): Float64Array {
  let max = -Infinity;
  for (const v of logits) max = Math.max(max, v);
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(logits, (v) => v - lse);
}

/** Stories that end in a fixed reply, the reply's tokens counted in the loss. */
function examples(engine: WebGpuEngine): TrainingExample[] {
  const starts = ['Tom had a red ball.', 'The cat sat on the mat.', 'A big dog ran to the park.', 'Sue saw a bird in the tree.'];
  return starts.map((s) => {
    const prompt = engine.tokenizer.encode(s);
    const reply = engine.tokenizer.encode(REPLY).filter((t) => t !== 1);
    const tokens = Int32Array.from([...prompt, ...reply]);
    const lossMask = new Uint8Array(tokens.length);
    for (let t = prompt.length - 1; t < tokens.length - 1; t++) lossMask[t] = 1;
    return { tokens, lossMask };
  });
}

/** llama.cpp's log-probabilities after every token and its greedy continuation, with the adapter at `lora`. */
async function llamaCpp(model: string, lora: string, tokens: number[], vocab: number, greedyTokens: number): Promise<{ logprobs: Float64Array[]; greedy: number[] }> {
  const m = await llama.loadModel({ modelPath: model });
  try {
    const context = await m.createContext({ threads: 1, contextSize: 256, sequences: 2, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32', lora: { adapters: [{ filePath: lora }] } });
    try {
      const want = { probabilities: true, options: { temperature: 1, topK: 0, topP: 1, minP: 0 } };
      const out = await context.getSequence().controlledEvaluate(tokens.map((t) => [t, { generateNext: want }]) as never);
      // Tokens whose probability underflows are absent: -Infinity, never compared.
      const logprobs = out.map((o) => {
        const row = new Float64Array(vocab).fill(-Infinity);
        for (const [t, p] of o!.next.probabilities!) row[Number(t)] = Math.log(p);
        return row;
      });
      const greedy: number[] = [];
      for await (const t of context.getSequence().evaluate(tokens.slice(0, 5) as never, { temperature: 0 })) {
        greedy.push(Number(t));
        if (greedy.length >= greedyTokens) break;
      }
      return { logprobs, greedy };
    } finally {
      await context.dispose();
    }
  } finally {
    await m.dispose();
  }
}

describe('adapters from our trainer give llama.cpp’s output', () => {
  for (const [file, f32] of [
    ['stories260K.gguf', true],
    ['TinyStories-656K-Q8_0.gguf', false],
  ] as const) {
    it(file, async () => {
      const engine = await testEngine(file, { grammars: 'in-process' });
      const settings: FineTuneSettings = { lora: { rank: 8, alpha: 16, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] }, epochs: 4, batchSize: 2, learningRate: 3e-3, seed: 3 };
      const trained = await fineTune(engine, examples(engine), undefined, settings);
      const path = join(dir, `${file}.lora.gguf`);
      writeFileSync(path, trained.adapter);
      const tokens = engine.tokenizer.encode(TEXT);
      const ref = await llamaCpp(sharedModel(file), path, tokens, engine.info.vocabSize, 24);
      const h = await engine.loadAdapter(trained.adapter, { name: 'trained' });
      try {
        const ours = (await engine.logits(tokens, { adapter: h.id })).map(logSoftmax);
        const base = (await engine.logits(tokens)).map(logSoftmax);
        let worst = 0;
        let effect = 0;
        ref.logprobs.forEach((want, p) => {
          const range = f32 ? 1 : Math.max(...want) - Math.min(...[...want].filter(Number.isFinite));
          for (let t = 0; t < want.length; t++) {
            effect = Math.max(effect, Math.abs(ours[p][t] - base[p][t]));
            if (want[t] > Math.log(1e-4)) worst = Math.max(worst, Math.abs(ours[p][t] - want[t]) / range);
          }
        });
        expect(worst).toBeLessThan(f32 ? F32_LOGPROB_TOL : Q8_RELATIVE_TOL);
        expect(effect).toBeGreaterThan(0.5);
        if (f32) {
          const r = await engine.generate({ tokens: tokens.slice(0, 5), maxTokens: 24, temperature: 0, stopAtEndOfGeneration: false, adapter: h.id }).result;
          expect(r.tokens).toEqual(ref.greedy);
        }
      } finally {
        await engine.unloadAdapter(h.id);
      }
    });
  }
});
