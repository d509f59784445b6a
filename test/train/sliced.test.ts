/**
 * A server checks and renders training files in slices: the other callers on its event loop get turns
 * while a large upload is checked, and the answer is the one the straight-through check gives.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { validateTrainingJsonl, validateTrainingJsonlAsync } from '../../engine/train/data.ts';
import { renderTrainingExamples, renderTrainingExamplesAsync } from '../../engine/train/render.ts';
import { testEngine } from '../helpers/engine.ts';

/** Runs `work` and counts how many 0 ms timers fired before it finished. */
async function turnsGivenDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let done = false;
  let turns = 0;
  const tick = () => {
    if (done) return;
    turns++;
    setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  const value = await work();
  done = true;
  return { value, turns };
}

describe('training files in slices', () => {
  it('a 4 MiB file is checked with the event loop given turns, to the same result, bad lines included', async () => {
    const good = JSON.stringify({ messages: [{ role: 'user', content: 'Tom saw a cat near the tree. '.repeat(8) }, { role: 'assistant', content: 'Label: cat' }] });
    const lines = Array.from({ length: Math.floor((4 * 2 ** 20) / (good.length + 1)) }, (_, i) => (i % 3000 === 1234 ? '{"messages": [{"role": "robot"}]}' : good));
    const text = lines.join('\n');
    // The straight-through check's time, warm (its first run also compiles it) and the best of two, so a
    // slow moment of the machine does not inflate the count expected below.
    const sync = validateTrainingJsonl(text);
    let syncMs = Infinity;
    for (let i = 0; i < 2; i++) {
      const t0 = performance.now();
      validateTrainingJsonl(text);
      syncMs = Math.min(syncMs, performance.now() - t0);
    }
    expect(sync.problems.length).toBeGreaterThan(0);
    const { value, turns } = await turnsGivenDuring(() => validateTrainingJsonlAsync(text));
    expect(value).toEqual(sync);
    // Each turn is a slice boundary (8 ms of work). How many a check of this size needs depends on the
    // machine, so the count is judged against the straight-through check's own time: at least a
    // quarter of the boundaries that time implies (a fixed count failed on a fast, idle CI run).
    expect(turns).toBeGreaterThanOrEqual(Math.max(1, Math.floor(syncMs / 8 / 4)));
  });

  it('rendering gives the event loop turns and the same examples as the straight-through render', async () => {
    const engine = await testEngine();
    const text = readFileSync(new URL('../fixtures/finetune/label-train.jsonl', import.meta.url), 'utf8');
    const conversations = validateTrainingJsonl(text).conversations;
    const many = Array.from({ length: 4 }, () => conversations).flat();
    const model = { tokenizer: engine.tokenizer, chatTemplate: engine.info.chatTemplate };
    const sync = renderTrainingExamples(model, many, { maxTokens: 512 });
    const { value, turns } = await turnsGivenDuring(() => renderTrainingExamplesAsync(model, many, { maxTokens: 512 }));
    expect(value).toEqual(sync);
    expect(value.examples.length).toBe(many.length);
    expect(turns).toBeGreaterThan(0);
  });
});
