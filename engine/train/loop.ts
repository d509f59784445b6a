/**
 * The training loop over a LoraTrainer: epochs of seeded-shuffled batches, the learning-rate schedule,
 * progress, validation loss after each epoch, checkpoints, exact resume and abort. Everything that decides
 * the order of work is a function of (settings, step), so a run resumed from a checkpoint takes the same
 * batches at the same learning rates as one that never stopped.
 */
import { CheckpointMismatchError, checkSameRun, decodeCheckpoint, encodeCheckpoint, runIdentityOf, type CheckpointPosition } from './checkpoint.ts';
import { epochOrder, learningRateAt } from './schedule.ts';
import { DEFAULT_OPTIMIZER, type FineTuneHooks, type FineTuneResult, type FineTuneSettings, type LoraTrainer, type TrainingExample } from './types.ts';

/** Thrown by the loop when hooks.signal aborts; `name` is 'AbortError' as for fetch and streams. */
export class FineTuneAbortedError extends Error {
  constructor(
    /** Optimizer steps done when it stopped. */
    readonly step: number,
  ) {
    super(`fine-tuning was aborted after ${step} step(s)`);
    this.name = 'AbortError';
  }
}

/** Throws an Error naming the first setting out of range. */
export function checkFineTuneSettings(s: FineTuneSettings): void {
  const int = (name: string, v: number, min: number) => {
    if (!Number.isInteger(v) || v < min) throw new Error(`${name} must be an integer ≥ ${min} (got ${v})`);
  };
  int('epochs', s.epochs, 1);
  int('batchSize', s.batchSize, 1);
  int('seed', s.seed, 0);
  int('lora.rank', s.lora.rank, 1);
  if (!Number.isFinite(s.learningRate) || s.learningRate <= 0) throw new Error(`learningRate must be a positive number (got ${s.learningRate})`);
  if (!Number.isFinite(s.lora.alpha) || s.lora.alpha < 0) throw new Error(`lora.alpha must be a number ≥ 0 (got ${s.lora.alpha})`);
  if (s.lora.targets.length === 0) throw new Error('lora.targets must name at least one matrix');
  if (s.maxTokens !== undefined) int('maxTokens', s.maxTokens, 2);
}

export interface TrainingClock {
  now(): number;
}

export async function runTraining(
  trainer: LoraTrainer,
  train: readonly TrainingExample[],
  validation: readonly TrainingExample[] | undefined,
  settings: FineTuneSettings,
  hooks: FineTuneHooks = {},
  clock: TrainingClock = performance,
): Promise<FineTuneResult> {
  checkFineTuneSettings(settings);
  if (train.length === 0) throw new Error('there are no training examples');
  const B = settings.batchSize;
  const stepsPerEpoch = Math.ceil(train.length / B);
  const totalSteps = settings.epochs * stepsPerEpoch;
  const identity = runIdentityOf(settings, { ...DEFAULT_OPTIMIZER, ...settings.optimizer }, train, validation);
  const every = hooks.checkpoint?.every ?? 0;
  if (hooks.checkpoint && (!Number.isInteger(every) || every < 1)) throw new Error(`checkpoint.every must be an integer ≥ 1 (got ${every})`);

  let pos: CheckpointPosition = { step: 0, run: identity, trainLoss: [], validationLoss: [], trainedTokens: 0, totalTokens: 0, wallMs: 0 };
  if (hooks.checkpoint?.resumeFrom) {
    try {
      const cp = decodeCheckpoint(hooks.checkpoint.resumeFrom);
      checkSameRun(cp.position.run, identity);
      await trainer.loadState(cp.trainerState);
      if (trainer.stepsTaken !== cp.position.step) throw new Error(`the checkpoint's trainer state is at step ${trainer.stepsTaken}, its loop position at step ${cp.position.step}: the checkpoint is inconsistent`);
      pos = { ...cp.position, run: identity };
    } catch (e) {
      throw new CheckpointMismatchError((e as Error).message);
    }
  }

  const started = clock.now();
  const firstStep = pos.step;
  let runTokens = 0;
  let saved = pos.step;
  const wallMs = () => pos.wallMs + (clock.now() - started);
  const save = async () => {
    const trainerState = await trainer.saveState();
    await hooks.checkpoint!.save(encodeCheckpoint({ position: { ...pos, wallMs: wallMs() }, trainerState }), pos.step);
    saved = pos.step;
  };
  const stopIfAborted = async () => {
    if (!hooks.signal?.aborted) return;
    // A checkpoint on the way out lets a stopped job (a server shutting down) continue where it was.
    if (hooks.checkpoint && saved !== pos.step) await save();
    throw new FineTuneAbortedError(pos.step);
  };

  let order: number[] = [];
  let orderEpoch = -1;
  await stopIfAborted();
  while (pos.step < totalSteps) {
    const epoch = Math.floor(pos.step / stepsPerEpoch);
    if (orderEpoch !== epoch) {
      order = epochOrder(train.length, settings.seed, epoch);
      orderEpoch = epoch;
    }
    const at = (pos.step % stepsPerEpoch) * B;
    const batch = order.slice(at, at + B).map((i) => train[i]);
    await hooks.beforeStep?.();
    await stopIfAborted();
    const r = await trainer.step(batch, learningRateAt(pos.step, totalSteps, settings.learningRate));
    if (!Number.isFinite(r.loss)) throw new Error(`training diverged: the loss of step ${pos.step + 1} is ${r.loss}; try a lower learning rate`);
    const batchTokens = batch.reduce((n, ex) => n + ex.tokens.length, 0);
    runTokens += batchTokens;
    pos.step++;
    pos.trainLoss.push(r.loss);
    pos.trainedTokens += r.tokens;
    pos.totalTokens += batchTokens;

    const runMs = clock.now() - started;
    const msPerStep = runMs / (pos.step - firstStep);
    hooks.onProgress?.({
      step: pos.step,
      totalSteps,
      epoch: epoch + 1,
      loss: r.loss,
      tokensPerSecond: runMs > 0 ? (runTokens * 1000) / runMs : 0,
      elapsedMs: wallMs(),
      etaMs: msPerStep * (totalSteps - pos.step),
    });

    const epochEnd = pos.step % stepsPerEpoch === 0;
    if (epochEnd) {
      const losses = pos.trainLoss.slice(pos.step - stepsPerEpoch);
      const trainLoss = losses.reduce((a, b) => a + b, 0) / losses.length;
      let validationLoss: number | null = null;
      if (validation && validation.length > 0) {
        validationLoss = await evaluateInBatches(trainer, validation, B);
        pos.validationLoss.push(validationLoss);
      }
      hooks.onEpoch?.({ epoch: epoch + 1, trainLoss, validationLoss });
    }
    if (hooks.checkpoint && (epochEnd || pos.step % every === 0)) await save();
    await stopIfAborted();
  }

  const adapter = await trainer.exportAdapter({
    'svc.fine_tune.steps': String(totalSteps),
    'svc.fine_tune.epochs': String(settings.epochs),
    'svc.fine_tune.batch_size': String(B),
    'svc.fine_tune.learning_rate': String(settings.learningRate),
    'svc.fine_tune.seed': String(settings.seed),
    'svc.fine_tune.train_examples': String(train.length),
  });
  return {
    adapter,
    steps: pos.step,
    trainLoss: pos.trainLoss,
    validationLoss: pos.validationLoss,
    trainedTokens: pos.trainedTokens,
    totalTokens: pos.totalTokens,
    wallMs: wallMs(),
  };
}

/** Mean loss over all counted tokens of `examples`, evaluated a training batch at a time to bound memory. */
async function evaluateInBatches(trainer: LoraTrainer, examples: readonly TrainingExample[], batchSize: number): Promise<number> {
  let sum = 0;
  let tokens = 0;
  for (let i = 0; i < examples.length; i += batchSize) {
    const r = await trainer.evaluate(examples.slice(i, i + batchSize));
    sum += r.loss * r.tokens;
    tokens += r.tokens;
  }
  return tokens > 0 ? sum / tokens : NaN;
}
