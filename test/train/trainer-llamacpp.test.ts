/**
 * The adapter the trainer exports means in llama.cpp what it meant in training: on stories260K, after
 * training, the trainer's loss on a sequence equals the cross-entropy llama.cpp computes for the same
 * tokens with the exported adapter file loaded through its LoRA option, and differs from the base model's.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import { afterAll, describe, expect, it } from 'vitest';
import { LORA_TARGETS } from '../../engine/lora/adapter-file.ts';
import { createLoraTrainer } from '../../engine/train/gpu/index.ts';
import type { TrainingExample } from '../../engine/train/types.ts';
import { testEngine } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-lora-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** llama.cpp's greedy continuation of `prompt` and the mean −log p of each continuation token, with or without an adapter. */
async function llamaCpp(prompt: number[], steps: number, adapter?: string): Promise<{ tokens: number[]; loss: number }> {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: sharedModel('stories260K.gguf') });
  try {
    const context = await model.createContext({
      threads: 1,
      contextSize: 256,
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
      ...(adapter ? { lora: { adapters: [{ filePath: adapter }] } } : {}),
    });
    try {
      const seq = context.getSequence();
      const tokens: number[] = [];
      let nll = 0;
      for await (const o of seq.evaluateWithMetadata(prompt as never, { probabilities: true }, { temperature: 0 })) {
        const t = Number(o.token);
        tokens.push(t);
        nll -= Math.log(o.probabilities.get(o.token as never) ?? 0);
        if (tokens.length >= steps) break;
      }
      return { tokens, loss: nll / tokens.length };
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

describe('an exported adapter in llama.cpp', () => {
  it('gives the loss the trainer computes, which is not the base model’s', async () => {
    const engine = await testEngine();
    const text = engine.tokenizer.encode('Once upon a time, there was a cat named Tom. Tom liked to sing.');
    const ex: TrainingExample = { tokens: Int32Array.from(text), lossMask: Uint8Array.from(text, (_, t) => (t < text.length - 1 ? 1 : 0)) };
    const trainer = await createLoraTrainer(engine, { rank: 8, alpha: 16, targets: LORA_TARGETS }, { seed: 21 });
    try {
      for (let i = 0; i < 5; i++) await trainer.step([ex], 1e-2);
      const path = join(dir, 'adapter.gguf');
      writeFileSync(path, await trainer.exportAdapter());
      // Teacher forcing along llama.cpp's own greedy path with the adapter: those tokens, scored by both.
      const prompt = engine.tokenizer.encode('One day, Tom the cat');
      const adapted = await llamaCpp(prompt, 12, path);
      const seq = [...prompt, ...adapted.tokens];
      const counted: TrainingExample = { tokens: Int32Array.from(seq), lossMask: Uint8Array.from(seq, (_, t) => (t >= prompt.length - 1 && t < seq.length - 1 ? 1 : 0)) };
      const ours = await trainer.evaluate([counted]);
      expect(ours.tokens).toBe(12);
      // Measured: 0.0334717 against llama.cpp's 0.0334713 (the base model: 1.37).
      expect(Math.abs(ours.loss - adapted.loss)).toBeLessThan(1e-3 * adapted.loss + 2e-5);
      // The adapter matters here: the base model (a fresh trainer, B = 0) scores the same tokens far
      // worse, and greedy llama.cpp without the adapter continues differently.
      const fresh = await createLoraTrainer(engine, { rank: 8, alpha: 16, targets: LORA_TARGETS }, { seed: 21 });
      const baseLoss = (await fresh.evaluate([counted])).loss;
      fresh.destroy();
      expect(baseLoss - adapted.loss).toBeGreaterThan(0.5);
      expect((await llamaCpp(prompt, 12)).tokens).not.toEqual(adapted.tokens);
    } finally {
      trainer.destroy();
    }
  });
});
