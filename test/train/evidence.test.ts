/**
 * Evidence that fine-tuning teaches: on the TinyStories models, an adapter trained on "story sentence →
 * Label: <animal>" makes greedy answers to held-out sentences take that format, where the base model
 * never does, and training loss falls far. The answers come from llama.cpp loading the adapter file we
 * wrote, and from our engine serving it where it can (see generate-with-adapter.ts), prompts rendered
 * exactly as serving renders a chat.
 *
 * SVC_EVIDENCE_REPORT=<file.json> writes the loss curves, wall times and answers (docs/fine-tuning.md
 * quotes them).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FALLBACK_STOP, renderChat } from '../../engine/chat/index.ts';
import { validateTrainingJsonl } from '../../engine/train/data.ts';
import { fineTune } from '../../engine/train/fine-tune.ts';
import { renderTrainingExamples } from '../../engine/train/render.ts';
import type { FineTuneSettings } from '../../engine/train/types.ts';
import { testEngine } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';
import { disposeLlama, generateWithAdapter, generateWithEngineAdapter, type AdapterAnswer } from './generate-with-adapter.ts';

const conversations = (split: string) => validateTrainingJsonl(readFileSync(new URL(`../fixtures/finetune/label-${split}.jsonl`, import.meta.url), 'utf8')).conversations;
const report: Record<string, unknown> = {};

afterAll(async () => {
  await disposeLlama();
  if (process.env.SVC_EVIDENCE_REPORT) writeFileSync(process.env.SVC_EVIDENCE_REPORT, JSON.stringify(report, null, 1) + '\n');
});

const ALL_TARGETS = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const;
const CASES: { model: string; settings: FineTuneSettings; learnsToStop: boolean }[] = [
  // stories260K never saw EOS (nor '#') in pre-training: no adapter of its inner matrices can make it
  // predict one, so it answers in the format and then runs on (see engine/train/render.ts).
  { model: 'stories260K.gguf', settings: { lora: { rank: 8, alpha: 16, targets: ALL_TARGETS }, epochs: 2, batchSize: 4, learningRate: 3e-3, seed: 0 }, learnsToStop: false },
  { model: 'TinyStories-656K-Q8_0.gguf', settings: { lora: { rank: 8, alpha: 16, targets: ALL_TARGETS }, epochs: 4, batchSize: 4, learningRate: 3e-3, seed: 0 }, learnsToStop: true },
];

describe('fine-tuning teaches a reply format (evidence)', () => {
  for (const c of CASES) {
    it(`${c.model}: loss falls, and held-out answers take the "Label: <animal>" format the base model never writes`, async () => {
      const engine = await testEngine(c.model);
      const model = { tokenizer: engine.tokenizer, chatTemplate: engine.info.chatTemplate };
      const train = renderTrainingExamples(model, conversations('train'), { maxTokens: 256 });
      const heldout = conversations('heldout');
      const validation = renderTrainingExamples(model, heldout, { maxTokens: 256 });
      expect([...train.problems, ...validation.problems]).toEqual([]);

      const result = await fineTune(engine, train.examples, validation.examples, c.settings);
      const stepsPerEpoch = Math.ceil(train.examples.length / c.settings.batchSize);
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const firstSteps = mean(result.trainLoss.slice(0, 3));
      const lastEpoch = mean(result.trainLoss.slice(-stepsPerEpoch));
      expect(lastEpoch).toBeLessThan(0.25 * firstSteps);
      expect(result.validationLoss.at(-1)!).toBeLessThan(0.25 * firstSteps);

      const dir = mkdtempSync(join(tmpdir(), 'svc-evidence-'));
      const adapterPath = join(dir, 'label.gguf');
      writeFileSync(adapterPath, result.adapter);
      // The prompt exactly as a chat completion renders it: the user's message, the assistant's turn open.
      const prompts = heldout.map((h) => renderChat(model, [{ role: 'user', content: h.messages[0].content }]).tokens);
      const gen = { modelPath: sharedModel(c.model), prompts, maxTokens: 16, stop: FALLBACK_STOP, tokenizer: engine.tokenizer };
      const base = await generateWithAdapter(gen);
      const adapted = await generateWithAdapter({ ...gen, adapterPath });
      const formatted = (answers: AdapterAnswer[]) => answers.filter((a) => a.text.startsWith('Label:')).length;
      const animal = (i: number) => heldout[i].messages[1].content;
      const right = adapted.filter((a, i) => a.text.startsWith(animal(i))).length;
      // Our engine serving the same file: the same prompts, the same bar to clear.
      const ours = { base: await generateWithEngineAdapter(engine, undefined, gen), adapted: await generateWithEngineAdapter(engine, result.adapter, gen) };

      report[c.model] = {
        settings: c.settings,
        examples: train.examples.length,
        steps: result.steps,
        wallMs: Math.round(result.wallMs),
        tokensPerSecond: Math.round((result.totalTokens * 1000) / result.wallMs),
        trainLoss: result.trainLoss.map((l) => Number(l.toFixed(4))),
        validationLoss: result.validationLoss.map((l) => Number(l.toFixed(4))),
        heldout: heldout.length,
        baseFormatted: formatted(base),
        adaptedFormatted: formatted(adapted),
        adaptedRightAnimal: right,
        adaptedStopped: adapted.filter((a) => a.stoppedBy !== 'length').length,
        samples: heldout.slice(0, 4).map((h, i) => ({ user: h.messages[0].content, base: base[i].text, adapted: adapted[i].text })),
        engine: { baseFormatted: formatted(ours.base), adaptedFormatted: formatted(ours.adapted), sameAnswersAsLlamaCpp: ours.adapted.filter((a, i) => a.text === adapted[i].text).length },
      };

      expect(formatted(base)).toBe(0);
      expect(formatted(adapted)).toBeGreaterThanOrEqual(Math.ceil(0.75 * heldout.length));
      // More than the format: most answers name the sentence's animal.
      expect(right).toBeGreaterThanOrEqual(Math.ceil(0.5 * heldout.length));
      if (c.learnsToStop) expect(adapted.filter((a) => a.stoppedBy === 'eog' && /^Label: [a-z]+$/.test(a.text)).length).toBeGreaterThanOrEqual(Math.ceil(0.75 * heldout.length));
      expect(formatted(ours.base)).toBe(0);
      expect(formatted(ours.adapted)).toBeGreaterThanOrEqual(Math.ceil(0.75 * heldout.length));
      expect(ours.adapted.filter((a, i) => a.text.startsWith(animal(i))).length).toBeGreaterThanOrEqual(Math.ceil(0.5 * heldout.length));
    }, 300_000);
  }
});
