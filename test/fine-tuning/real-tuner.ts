/**
 * The real tuner for the fine-tuning tests: protocol/fine-tuning/engine-tuner.ts over the real trainer
 * (engine/train/fine-tune.ts, render.ts) and the real engine's adapters, on the test model. The tests see
 * what happened through RecordingTuner, a spy that forwards every call to it and notes what went by.
 */
import type { WebGpuEngine } from '../../engine/engine.ts';
import { fineTune } from '../../engine/train/fine-tune.ts';
import { renderTrainingExamples } from '../../engine/train/render.ts';
import type { FineTuneHooks, TrainingConversation } from '../../engine/train/types.ts';
import { engineTuner, type AdapterEngine, type TrainingFunctions } from '../../protocol/fine-tuning/engine-tuner.ts';
import type { Tuner, TuneInput, TuneOutput } from '../../protocol/fine-tuning/tuner.ts';
import { testEngine } from '../helpers/engine.ts';

export const training: TrainingFunctions<AdapterEngine> = { fineTune: fineTune as TrainingFunctions<AdapterEngine>['fineTune'], renderTrainingExamples };

/** One train() call as the spy saw it. */
export interface TuneRun {
  input: TuneInput;
  /** Whether the runner passed a checkpoint to resume from. */
  resumed: boolean;
  /** The trainer's progress reports, in order (the first is step 1, or the checkpoint's step + 1 after a resume). */
  steps: { step: number; totalSteps: number; loss: number }[];
  /** Every beforeStep() the runner awaited (how long it held the trainer back), in ms. */
  waits: number[];
  /** Inside a beforeStep() now. */
  waiting: boolean;
  output?: TuneOutput;
  error?: unknown;
}

export class RecordingTuner implements Tuner {
  readonly runs: TuneRun[] = [];
  /** Adapters loaded on the engine now, id → name. */
  readonly loaded = new Map<string, string>();
  readonly unloaded: string[] = [];
  /** FAULT INJECTION: while set, loadAdapter rejects with it instead of reaching the engine. */
  failLoads?: Error;
  /** FAULT INJECTION: while true, inferenceBusy() says busy whatever the engine says. */
  forceBusy = false;
  readonly maxTokens?: number;

  constructor(
    readonly inner: Tuner,
    readonly engine: WebGpuEngine,
  ) {
    this.maxTokens = inner.maxTokens;
  }

  async train(input: TuneInput, hooks: FineTuneHooks): Promise<TuneOutput> {
    const run: TuneRun = { input, resumed: !!hooks.checkpoint?.resumeFrom, steps: [], waits: [], waiting: false };
    this.runs.push(run);
    const beforeStep = hooks.beforeStep;
    try {
      run.output = await this.inner.train(input, {
        ...hooks,
        beforeStep: beforeStep
          ? async () => {
              const t = performance.now();
              run.waiting = true;
              try {
                await beforeStep();
              } finally {
                run.waiting = false;
              }
              run.waits.push(performance.now() - t);
            }
          : undefined,
        onProgress: (p) => {
          run.steps.push({ step: p.step, totalSteps: p.totalSteps, loss: p.loss });
          hooks.onProgress?.(p);
        },
      });
      return run.output;
    } catch (e) {
      run.error = e;
      throw e;
    }
  }

  async loadAdapter(adapter: Uint8Array, name: string): Promise<string> {
    if (this.failLoads) throw this.failLoads;
    const id = await this.inner.loadAdapter(adapter, name);
    this.loaded.set(id, name);
    return id;
  }

  async unloadAdapter(id: string): Promise<void> {
    this.unloading++;
    try {
      await this.inner.unloadAdapter(id);
      this.loaded.delete(id);
      this.unloaded.push(id);
    } finally {
      this.unloading--;
    }
  }

  private unloading = 0;

  /** Once the unloads started by now (callers fire them without waiting) have reached the engine and ended. */
  async settled(): Promise<void> {
    await new Promise((r) => setTimeout(r, 0));
    while (this.unloading > 0) await new Promise((r) => setTimeout(r, 5));
  }

  inferenceBusy(): boolean {
    return this.forceBusy || this.inner.inferenceBusy();
  }

  /** Assistant tokens the trainer counts in these conversations (one epoch), rendered as the tuner renders them. */
  assistantTokens(conversations: readonly TrainingConversation[]): number {
    const { examples } = renderTrainingExamples({ tokenizer: this.engine.tokenizer, chatTemplate: this.engine.info.chatTemplate }, conversations, { maxTokens: this.engine.info.contextLength });
    return examples.reduce((n, x) => n + x.lossMask.reduce((k, m) => k + m, 0), 0);
  }
}

/** A fresh recording spy over the real tuner on the test engine (the engine is shared within a test file). */
export async function realTuner(engineOptions: Parameters<typeof testEngine>[1] = {}): Promise<RecordingTuner> {
  const engine = await testEngine('stories260K.gguf', engineOptions);
  return new RecordingTuner(engineTuner(engine as unknown as AdapterEngine, training), engine);
}
