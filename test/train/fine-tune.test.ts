/**
 * fineTune on the real GPU trainer (stories260K, llvmpipe): the loop's hooks, checkpoints and an exact
 * resume after an abort, on a few short conversations so it stays quick.
 */
import { describe, expect, it } from 'vitest';
import { decodeCheckpoint } from '../../engine/train/checkpoint.ts';
import { fineTune, FineTuneAbortedError } from '../../engine/train/fine-tune.ts';
import { renderTrainingExamples } from '../../engine/train/render.ts';
import type { FineTuneProgress, FineTuneSettings, TrainingExample } from '../../engine/train/types.ts';
import { labelConversations } from '../../scripts/fixtures/label-conversations.ts';
import { testEngine } from '../helpers/engine.ts';

const settings: FineTuneSettings = { lora: { rank: 4, alpha: 8, targets: ['q', 'v', 'down'] }, epochs: 2, batchSize: 2, learningRate: 3e-3, seed: 5 };

async function data(): Promise<{ train: TrainingExample[]; validation: TrainingExample[] }> {
  const engine = await testEngine();
  const model = { tokenizer: engine.tokenizer, chatTemplate: engine.info.chatTemplate };
  const render = (c: ReturnType<typeof labelConversations>) => renderTrainingExamples(model, c, { maxTokens: 256 }).examples;
  // Five conversations in batches of two: each epoch ends with a batch of one.
  return { train: render(labelConversations('train', 5, 1)), validation: render(labelConversations('heldout', 2, 1)) };
}

describe('fineTune', () => {
  it('steps through shuffled batches with progress, beforeStep, validation per epoch and checkpoints', async () => {
    const engine = await testEngine();
    const { train, validation } = await data();
    const progress: FineTuneProgress[] = [];
    const epochs: { epoch: number; trainLoss: number; validationLoss: number | null }[] = [];
    const events: string[] = [];
    const saved: number[] = [];
    const r = await fineTune(engine, train, validation, settings, {
      beforeStep: async () => void events.push(`before ${progress.length + 1}`),
      onProgress: (p) => (progress.push(p), events.push(`step ${p.step}`)),
      onEpoch: (e) => epochs.push(e),
      checkpoint: { every: 2, save: async (state, step) => void (saved.push(step), expect(decodeCheckpoint(state).position.step).toBe(step)) },
    });
    expect(r.steps).toBe(6);
    expect(events).toEqual([1, 2, 3, 4, 5, 6].flatMap((s) => [`before ${s}`, `step ${s}`]));
    expect(progress.map((p) => [p.step, p.totalSteps, p.epoch])).toEqual([[1, 6, 1], [2, 6, 1], [3, 6, 1], [4, 6, 2], [5, 6, 2], [6, 6, 2]]);
    expect(progress.map((p) => p.loss)).toEqual(r.trainLoss);
    for (const p of progress) {
      expect(p.tokensPerSecond).toBeGreaterThan(0);
      expect(p.elapsedMs).toBeGreaterThan(0);
    }
    expect(progress.at(-1)!.etaMs).toBe(0);
    expect(epochs.map((e) => e.epoch)).toEqual([1, 2]);
    expect(epochs[0].trainLoss).toBeCloseTo((r.trainLoss[0] + r.trainLoss[1] + r.trainLoss[2]) / 3, 6);
    expect(epochs.map((e) => e.validationLoss)).toEqual(r.validationLoss);
    // Every 2 steps, and at the end of each epoch (step 3); step 6 is both, saved once.
    expect(saved).toEqual([2, 3, 4, 6]);
    const counted = train.reduce((n, ex) => n + ex.lossMask.reduce((a, b) => a + b, 0), 0);
    expect(r.trainedTokens).toBe(2 * counted);
    expect(r.totalTokens).toBe(2 * train.reduce((n, ex) => n + ex.tokens.length, 0));
    expect(new TextDecoder().decode(r.adapter.subarray(0, 4))).toBe('GGUF');
  }, 120_000);

  it('aborted after a step, then resumed from its checkpoint, ends exactly where an unbroken run does', async () => {
    const engine = await testEngine();
    const { train, validation } = await data();
    const unbroken = await fineTune(engine, train, validation, settings);

    let checkpoint: Uint8Array | undefined;
    const controller = new AbortController();
    const stopped = fineTune(engine, train, validation, settings, {
      signal: controller.signal,
      onProgress: (p) => p.step === 4 && controller.abort(),
      // Checkpoints only at epoch ends: the abort itself must save step 4.
      checkpoint: { every: 1000, save: async (state) => void (checkpoint = state) },
    });
    const error = await stopped.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FineTuneAbortedError);
    expect((error as Error).name).toBe('AbortError');
    expect((error as FineTuneAbortedError).step).toBe(4);
    expect(decodeCheckpoint(checkpoint!).position.step).toBe(4);

    const steps: number[] = [];
    const resumed = await fineTune(engine, train, validation, settings, { onProgress: (p) => steps.push(p.step), checkpoint: { every: 1000, save: async () => {}, resumeFrom: checkpoint } });
    expect(steps).toEqual([5, 6]);
    expect(resumed.trainLoss).toEqual(unbroken.trainLoss);
    expect(resumed.validationLoss).toEqual(unbroken.validationLoss);
    expect(resumed.trainedTokens).toBe(unbroken.trainedTokens);
    expect(Buffer.from(resumed.adapter).equals(Buffer.from(unbroken.adapter))).toBe(true);

    // The checkpoint belongs to its run: other settings are refused by name before any step.
    await expect(fineTune(engine, train, validation, { ...settings, learningRate: 1e-3 }, { checkpoint: { every: 10, save: async () => {}, resumeFrom: checkpoint } })).rejects.toThrow(
      'the checkpoint was made with learningRate 0.003, not 0.001',
    );
  }, 180_000);

  it('refuses settings out of range and examples longer than maxTokens, naming them', async () => {
    const engine = await testEngine();
    const { train } = await data();
    await expect(fineTune(engine, train, undefined, { ...settings, epochs: 0 })).rejects.toThrow('epochs must be an integer ≥ 1 (got 0)');
    await expect(fineTune(engine, train, undefined, { ...settings, learningRate: -1 })).rejects.toThrow('learningRate must be a positive number (got -1)');
    await expect(fineTune(engine, train, undefined, { ...settings, maxTokens: 10 })).rejects.toThrow(/an example is \d+ tokens, more than maxTokens 10/);
    await expect(fineTune(engine, [], undefined, settings)).rejects.toThrow('there are no training examples');
  });
});
