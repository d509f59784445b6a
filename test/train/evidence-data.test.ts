/** The evidence data is what its committed script makes, valid, and its held-out sentences are new. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateTrainingJsonl } from '../../engine/train/data.ts';
import { LABEL_FILES, labelConversations, toJsonl } from '../../scripts/fixtures/label-conversations.ts';

const file = (split: string) => readFileSync(new URL(`../fixtures/finetune/label-${split}.jsonl`, import.meta.url), 'utf8');

describe('test/fixtures/finetune', () => {
  it('holds exactly what scripts/fixtures/finetune-data.ts writes, as valid training files', () => {
    for (const split of ['train', 'heldout'] as const) {
      const { count, seed } = LABEL_FILES[split];
      expect(file(split)).toBe(toJsonl(labelConversations(split, count, seed)));
      const check = validateTrainingJsonl(file(split));
      expect(check.problems).toEqual([]);
      expect(check.conversations).toHaveLength(count);
    }
  });

  it('no held-out sentence is in the training set', () => {
    const users = (split: string) => validateTrainingJsonl(file(split)).conversations.map((c) => c.messages[0].content);
    const train = new Set(users('train'));
    expect(users('heldout').filter((s) => train.has(s))).toEqual([]);
  });
});
