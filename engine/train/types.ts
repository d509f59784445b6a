/**
 * Contracts between the parts of LoRA fine-tuning: the GPU trainer (engine/train/gpu/), the training loop
 * and data preparation (engine/train/), the CLI (`svc finetune`) and the fine-tuning jobs of the API.
 */
import type { LoraTarget } from '../lora/adapter-file.ts';

/** One rendered training conversation. */
export interface TrainingExample {
  /** Token ids of the whole rendered conversation (BOS included where the model adds one). */
  tokens: Int32Array;
  /**
   * Same length as `tokens`: lossMask[t] = 1 when the prediction of tokens[t + 1] from tokens[0..t] counts in
   * the loss, i.e. tokens[t + 1] is part of an assistant message (its end-of-turn token included). The last
   * entry is always 0.
   */
  lossMask: Uint8Array;
}

export interface LoraShape {
  rank: number;
  alpha: number;
  targets: readonly LoraTarget[];
}

export interface OptimizerSettings {
  /** AdamW. */
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
  /** Gradients are scaled down so their global L2 norm is at most this (0 = no clipping). */
  clipNorm: number;
}

export const DEFAULT_OPTIMIZER: OptimizerSettings = { beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01, clipNorm: 1 };

export interface StepResult {
  /** Mean cross-entropy over the counted positions of the batch. */
  loss: number;
  /** Counted positions (assistant tokens) in the batch. */
  tokens: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
}

/**
 * A LoRA adapter being trained on the GPU over a frozen base model. Adapter weights, gradients and AdamW
 * moments live on the device; a step reads back only the loss and the gradient norm.
 */
export interface LoraTrainer {
  readonly shape: LoraShape;
  /** Trainable parameters (the A and B matrices). */
  readonly parameterCount: number;
  /** Optimizer steps taken so far (restored by loadState). */
  readonly stepsTaken: number;
  /** One optimizer step: forward, loss, backward to the adapter weights, clipping, AdamW at `learningRate`. */
  step(batch: readonly TrainingExample[], learningRate: number): Promise<StepResult>;
  /** Mean loss over the counted positions of `examples`, with no update. */
  evaluate(examples: readonly TrainingExample[]): Promise<{ loss: number; tokens: number }>;
  /** The adapter now, as a llama.cpp GGUF LoRA file. */
  exportAdapter(metadata?: Readonly<Record<string, string>>): Promise<Uint8Array>;
  /** Adapter weights, AdamW moments and step count, to continue exactly after a restart. */
  saveState(): Promise<Uint8Array>;
  loadState(state: Uint8Array): Promise<void>;
  destroy(): void;
}

export interface FineTuneProgress {
  /** Optimizer steps done, 1 after the first. */
  step: number;
  totalSteps: number;
  /** 1-based epoch of that step. */
  epoch: number;
  /** Loss of that step's batch. */
  loss: number;
  /** All tokens run through the model (prompts and replies) per second of this run (since a resume). */
  tokensPerSecond: number;
  elapsedMs: number;
  /** Estimated time left. */
  etaMs: number;
}

/** A line of the provider's chat fine-tuning JSONL that passed validation. */
export interface TrainingConversation {
  /** `weight: 0` on an assistant message leaves it out of the loss (the provider's format). */
  messages: readonly { role: 'system' | 'user' | 'assistant'; content: string; weight?: 0 | 1 }[];
  /** 1-based line of the file it came from, so later problems (too long once rendered) can name it. */
  line?: number;
}

export interface TrainingFileProblem {
  /** 1-based line number in the file. */
  line: number;
  message: string;
}

export interface FineTuneSettings {
  lora: LoraShape;
  epochs: number;
  /** Conversations per optimizer step. */
  batchSize: number;
  /** Peak learning rate (linear warm-up over the first steps, then linear decay to 10%). */
  learningRate: number;
  seed: number;
  optimizer?: Partial<OptimizerSettings>;
  /** Longest rendered conversation in tokens; longer ones are refused before training starts. */
  maxTokens?: number;
}

export interface FineTuneHooks {
  signal?: AbortSignal;
  onProgress?(p: FineTuneProgress): void;
  /** After each epoch (1-based): its mean step loss, and the validation loss when there is validation data. */
  onEpoch?(e: { epoch: number; trainLoss: number; validationLoss: number | null }): void;
  /** Awaited before every optimizer step: the API's job runner waits here while inference is busy. */
  beforeStep?(): Promise<void>;
  /**
   * Checkpointing: `save` is called every `every` steps, at the end of each epoch and on abort, with a
   * checkpoint (engine/train/checkpoint.ts: LoraTrainer.saveState() plus the loop's position); passing one
   * back as `resumeFrom` continues that run exactly.
   */
  checkpoint?: { every: number; save(state: Uint8Array, step: number): Promise<void>; resumeFrom?: Uint8Array };
}

export interface FineTuneResult {
  /** The trained adapter, a llama.cpp GGUF LoRA file. */
  adapter: Uint8Array;
  steps: number;
  /** Loss of every optimizer step, in order. */
  trainLoss: number[];
  /** Validation loss after each epoch (empty without validation data). */
  validationLoss: number[];
  /** Counted (assistant) tokens trained on, all epochs together, and all tokens run through the model. */
  trainedTokens: number;
  totalTokens: number;
  wallMs: number;
}
