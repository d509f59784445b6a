/** Fine-tuned model names: `ft:svc-<specialist>:acct-<id>:<suffix>`, the suffix made safe, and the name read back. */
import { describe, expect, it } from 'vitest';
import { fineTunedModelName, isFineTunedModelName, parseFineTunedModelName, sanitiseSuffix, specialistForModel } from '../../protocol/model-names.ts';
import { resolveHyperparameters } from '../../protocol/fine-tuning/requests.ts';

describe('fine-tuned model names', () => {
  it('follow ft:svc-<specialist>:acct-<account>:<suffix> and read back', () => {
    const name = fineTunedModelName('classify', 42, 'labels-v2');
    expect(name).toBe('ft:svc-classify:acct-42:labels-v2');
    expect(isFineTunedModelName(name)).toBe(true);
    expect(parseFineTunedModelName(name)).toEqual({ specialist: 'classify', accountId: 42, suffix: 'labels-v2' });
    for (const bad of ['ft:svc-chat:acct-0:x', 'ft:svc-chat:42:x', 'ft:chat:acct-1:x', 'ft:svc-chat:acct-1:', 'ft:svc-chat:acct-1:A', 'ft:svc-chat:acct-1:a:b']) {
      expect([bad, parseFineTunedModelName(bad)]).toEqual([bad, undefined]);
    }
    // Never a specialist name by the base grammar: the store decides whose it is.
    expect(specialistForModel(name, (n) => ['chat', 'classify'].includes(n))).toBeUndefined();
  });

  it('sanitise suffixes to [a-z0-9_-], at most 40 characters, no leading or trailing dash', () => {
    expect(sanitiseSuffix('Label Bot!')).toBe('label-bot');
    expect(sanitiseSuffix('  ../../etc:passwd  ')).toBe('etc-passwd');
    expect(sanitiseSuffix('under_score-ok')).toBe('under_score-ok');
    expect(sanitiseSuffix('ü')).toBe('');
    expect(sanitiseSuffix('x'.repeat(64))).toHaveLength(40);
    expect(parseFineTunedModelName(fineTunedModelName('chat', 1, sanitiseSuffix('Ça va? Très bien!')))).toMatchObject({ suffix: 'a-va-tr-s-bien' });
  });
});

describe("'auto' hyperparameters", () => {
  it('scale epochs and batch with the number of examples, and keep what was given', () => {
    expect(resolveHyperparameters({}, 10)).toEqual({ nEpochs: 10, batchSize: 1, learningRateMultiplier: 1, loraRank: 8, loraAlpha: 16 });
    expect(resolveHyperparameters({ n_epochs: 'auto', batch_size: 'auto' }, 1000)).toMatchObject({ nEpochs: 3, batchSize: 8 });
    expect(resolveHyperparameters({ n_epochs: 2, batch_size: 32, learning_rate_multiplier: 0.5, lora_rank: 4, lora_alpha: 8 }, 10)).toEqual({ nEpochs: 2, batchSize: 10, learningRateMultiplier: 0.5, loraRank: 4, loraAlpha: 8 });
  });
});
