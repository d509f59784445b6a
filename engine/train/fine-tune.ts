/**
 * Fine-tuning a LoRA adapter on the engine's model: the GPU trainer (engine/train/gpu/) driven by the
 * training loop (loop.ts). What `svc finetune` and the API's background job runner call.
 */
import type { WebGpuEngine } from '../engine.ts';
import { createLoraTrainer } from './gpu/index.ts';
import { checkFineTuneSettings, runTraining } from './loop.ts';
import type { FineTuneHooks, FineTuneResult, FineTuneSettings, TrainingExample } from './types.ts';

export { FineTuneAbortedError } from './loop.ts';

/** Tokens per forward pass of the trainer when conversations are shorter. */
const PASS_TOKENS = 512;

export async function fineTune(
  engine: WebGpuEngine,
  train: readonly TrainingExample[],
  validation: readonly TrainingExample[] | undefined,
  settings: FineTuneSettings,
  hooks: FineTuneHooks = {},
): Promise<FineTuneResult> {
  checkFineTuneSettings(settings);
  const all = [...train, ...(validation ?? [])];
  const longest = all.reduce((n, ex) => Math.max(n, ex.tokens.length), 0);
  const maxTokens = settings.maxTokens ?? longest;
  if (longest > maxTokens) throw new Error(`an example is ${longest} tokens, more than maxTokens ${maxTokens}`);
  if (maxTokens > engine.info.contextLength) throw new Error(`maxTokens ${maxTokens} is more than the model's context of ${engine.info.contextLength} tokens`);
  // The trainer packs whole sequences into forward passes of up to this many tokens: room for several
  // short conversations per pass keeps the GPU busy, and the longest must fit in one.
  const passTokens = Math.max(maxTokens, Math.min(PASS_TOKENS, engine.info.contextLength));
  const trainer = await createLoraTrainer(engine, settings.lora, { seed: settings.seed, optimizer: settings.optimizer, maxTokens: passTokens });
  try {
    return await runTraining(trainer, train, validation, settings, hooks);
  } finally {
    trainer.destroy();
  }
}
