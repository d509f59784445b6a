/** The checkpoint format: round trip, and refusals that say what is wrong. */
import { describe, expect, it } from 'vitest';
import { checkSameRun, decodeCheckpoint, encodeCheckpoint, hashExamples, runIdentityOf, type Checkpoint } from '../../engine/train/checkpoint.ts';
import type { FineTuneSettings, TrainingExample } from '../../engine/train/types.ts';

const settings: FineTuneSettings = { lora: { rank: 4, alpha: 8, targets: ['q', 'v'] }, epochs: 2, batchSize: 2, learningRate: 1e-3, seed: 3 };
const examples: TrainingExample[] = [
  { tokens: Int32Array.of(1, 5, 9), lossMask: Uint8Array.of(0, 1, 0) },
  { tokens: Int32Array.of(1, 6), lossMask: Uint8Array.of(1, 0) },
];

describe('fine-tuning checkpoints', () => {
  it('round-trip the loop position and the trainer state byte for byte', () => {
    const c: Checkpoint = {
      position: { step: 3, run: runIdentityOf(settings, { beta1: 0.9 }, examples, undefined), trainLoss: [2.5, 2.25, 2], validationLoss: [2.1], trainedTokens: 30, totalTokens: 90, wallMs: 1234.5 },
      trainerState: Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 255),
    };
    const back = decodeCheckpoint(encodeCheckpoint(c));
    expect(back).toEqual(c);
  });

  it('refuse what is not a checkpoint, or is cut short', () => {
    expect(() => decodeCheckpoint(new TextEncoder().encode('GGUF and more bytes'))).toThrow(/not a fine-tuning checkpoint/);
    const whole = encodeCheckpoint({ position: { step: 0, run: runIdentityOf(settings, {}, examples, undefined), trainLoss: [], validationLoss: [], trainedTokens: 0, totalTokens: 0, wallMs: 0 }, trainerState: new Uint8Array(4) });
    expect(() => decodeCheckpoint(whole.subarray(0, 40))).toThrow(/truncated/);
  });

  it('name the setting or data that differs from the run being resumed', () => {
    const a = runIdentityOf(settings, { beta1: 0.9 }, examples, undefined);
    expect(() => checkSameRun(a, runIdentityOf(settings, { beta1: 0.9 }, examples, undefined))).not.toThrow();
    expect(() => checkSameRun(a, runIdentityOf({ ...settings, epochs: 5 }, { beta1: 0.9 }, examples, undefined))).toThrow('the checkpoint was made with epochs 2, not 5');
    expect(() => checkSameRun(a, runIdentityOf({ ...settings, lora: { ...settings.lora, targets: ['q'] } }, { beta1: 0.9 }, examples, undefined))).toThrow(/targets \["q","v"\], not \["q"\]/);
    const changed = [examples[0], { tokens: Int32Array.of(1, 7), lossMask: Uint8Array.of(1, 0) }];
    expect(() => checkSameRun(a, runIdentityOf(settings, { beta1: 0.9 }, changed, undefined))).toThrow(/different training data/);
    expect(() => checkSameRun(a, runIdentityOf(settings, { beta1: 0.9 }, examples, examples))).toThrow(/different validation data/);
    // The mask is part of the data: the same tokens learned differently are another run.
    expect(hashExamples([{ ...examples[0], lossMask: Uint8Array.of(1, 1, 0) }])).not.toBe(hashExamples([examples[0]]));
  });
});
