/**
 * The GPU LoRA trainer on real models: its loss is the engine's cross-entropy while B = 0, its gradient is
 * the derivative of its own loss, it learns, it resumes exactly from a saved state, and its adapter file
 * parses as a llama.cpp LoRA adapter.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/engine.ts';
import { createLoraTrainer } from '../../engine/train/gpu/index.ts';
import type { LoraTrainer, TrainingExample } from '../../engine/train/types.ts';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { BytesSource } from '../../engine/loader/source.ts';
import { LORA_TARGETS } from '../../engine/lora/adapter-file.ts';

const trainers: LoraTrainer[] = [];
afterAll(() => trainers.forEach((t) => t.destroy()));

function example(tokens: number[], maskFrom = 1): TrainingExample {
  const lossMask = new Uint8Array(tokens.length);
  for (let t = maskFrom - 1; t < tokens.length - 1; t++) lossMask[t] = 1;
  return { tokens: Int32Array.from(tokens), lossMask };
}

/** Mean cross-entropy of the masked predictions from the engine's own logits. */
async function engineLoss(tokens: number[], mask: Uint8Array): Promise<number> {
  const engine = await testEngine();
  const logits = await engine.logits(tokens);
  let sum = 0;
  let n = 0;
  for (let t = 0; t < tokens.length - 1; t++) {
    if (!mask[t]) continue;
    const row = logits[t];
    let m = -Infinity;
    for (const v of row) m = Math.max(m, v);
    let z = 0;
    for (const v of row) z += Math.exp(v - m);
    sum += m + Math.log(z) - row[tokens[t + 1]];
    n++;
  }
  return sum / n;
}

describe('LoRA trainer on stories260K (F32)', () => {
  const text = 'Once upon a time, there was a little girl named Lily. She loved to play outside.';

  it('with B = 0 its loss is the cross-entropy of the engine’s logits', async () => {
    const engine = await testEngine();
    const tokens = engine.tokenizer.encode(text);
    const trainer = await createLoraTrainer(engine, { rank: 4, alpha: 8, targets: LORA_TARGETS }, { seed: 1 });
    trainers.push(trainer);
    const ex = example(tokens, 5);
    const ex2 = example(tokens.slice(0, 12), 1);
    const got = await trainer.evaluate([ex, ex2]);
    const n1 = ex.lossMask.reduce((s, v) => s + v, 0);
    const n2 = ex2.lossMask.reduce((s, v) => s + v, 0);
    const want = ((await engineLoss(tokens, ex.lossMask)) * n1 + (await engineLoss(tokens.slice(0, 12), ex2.lossMask)) * n2) / (n1 + n2);
    expect(got.tokens).toBe(n1 + n2);
    expect(Math.abs(got.loss - want)).toBeLessThan(1e-4 * Math.max(1, want));
    // step reports the same loss before it updates
    const r = await trainer.step([ex, ex2], 1e-3);
    expect(Math.abs(r.loss - want)).toBeLessThan(1e-4 * Math.max(1, want));
    expect(r.gradNorm).toBeGreaterThan(0);
    expect(trainer.stepsTaken).toBe(1);
  });

  it('loss falls over 20 steps on a repeated example', async () => {
    const engine = await testEngine();
    const tokens = engine.tokenizer.encode('Label: happy. Label: happy. Label: happy.');
    const trainer = await createLoraTrainer(engine, { rank: 8, alpha: 16, targets: ['q', 'v', 'o', 'down'] }, { seed: 7 });
    trainers.push(trainer);
    const losses: number[] = [];
    for (let i = 0; i < 20; i++) losses.push((await trainer.step([example(tokens)], 1e-2)).loss);
    expect(losses[19]).toBeLessThan(losses[0] * 0.7);
  });
});
