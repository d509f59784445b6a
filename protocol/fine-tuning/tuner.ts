/**
 * Everything fine-tuning needs from the engine, behind one small interface: the job runner and the
 * adapter cache program against it; it is implemented by protocol/fine-tuning/engine-tuner.ts (tests wrap
 * it in a recording spy: test/fine-tuning/real-tuner.ts).
 */
import type { FineTuneHooks, FineTuneSettings, TrainingConversation } from '../../engine/train/types.ts';

export interface TuneInput {
  train: readonly TrainingConversation[];
  validation?: readonly TrainingConversation[];
  settings: FineTuneSettings;
}

export interface TuneOutput {
  /** llama.cpp GGUF LoRA file. */
  adapter: Uint8Array;
  /** Assistant tokens trained on, all epochs together (what usage counts). */
  trainedTokens: number;
  steps: number;
  trainLoss: readonly number[];
  validationLoss: readonly number[];
}

/** The training data cannot be used with this model (a conversation too long, say): the job fails with this message. */
export class TuneInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TuneInputError';
  }
}

export interface Tuner {
  /** Renders the conversations with the model's chat template and trains; throws TuneInputError for unusable data. */
  train(input: TuneInput, hooks: FineTuneHooks): Promise<TuneOutput>;
  /** Loads an adapter for serving; resolves with the id generate() takes as `adapter`. */
  loadAdapter(adapter: Uint8Array, name: string): Promise<string>;
  unloadAdapter(id: string): Promise<void>;
  /** Whether inference is running or waiting on the engine now (training yields while it is). */
  inferenceBusy(): boolean;
  /** Longest rendered conversation the engine trains on (its context window). */
  readonly maxTokens?: number;
}
