/**
 * `bench --train`: LoRA fine-tuning throughput on our engine (engine/train/), rank 8 on all seven block
 * matrices. The data is the evidence set's shape (short "sentence → Label: <word>" chats) made here, so
 * the bench needs no file. Reported: tokens through the model per second (forward and backward), the
 * counted (assistant) tokens per second, ms per optimizer step, and the loss at the first and last step
 * so a broken run shows. There is no llama.cpp peer: node-llama-cpp does not train.
 */
import type { WebGpuEngine } from '../engine/engine.ts';
import { LORA_TARGETS } from '../engine/lora/adapter-file.ts';
import { fineTune } from '../engine/train/fine-tune.ts';
import { renderTrainingExamples } from '../engine/train/render.ts';
import type { TrainingConversation } from '../engine/train/types.ts';

export interface TrainScenarioResult {
  rank: number;
  targets: readonly string[];
  conversations: number;
  batchSize: number;
  steps: number;
  /** All tokens through the model, every step together. */
  totalTokens: number;
  /** Counted (assistant) tokens. */
  trainedTokens: number;
  wallMs: number;
  tokensPerSecond: number;
  trainedTokensPerSecond: number;
  msPerStep: number;
  firstLoss: number;
  lastLoss: number;
}

const ANIMALS = ['cat', 'dog', 'bird', 'fish', 'frog', 'bear', 'fox', 'owl', 'duck', 'cow', 'pig', 'hen'];
const PLACES = ['in the park', 'near the tree', 'by the river', 'in the garden', 'at the farm', 'on the hill'];

function conversations(n: number): TrainingConversation[] {
  return Array.from({ length: n }, (_, i) => {
    const animal = ANIMALS[i % ANIMALS.length];
    return { messages: [{ role: 'user', content: `Lily saw a ${animal} ${PLACES[i % PLACES.length]} and smiled.` }, { role: 'assistant', content: `Label: ${animal}` }] };
  });
}

export async function trainScenario(engine: WebGpuEngine, opts: { conversations?: number; batchSize?: number; epochs?: number } = {}): Promise<TrainScenarioResult> {
  const n = opts.conversations ?? 32;
  const batchSize = opts.batchSize ?? 4;
  const { examples, problems } = renderTrainingExamples({ tokenizer: engine.tokenizer, chatTemplate: engine.info.chatTemplate }, conversations(n), { maxTokens: engine.info.contextLength });
  if (problems.length > 0) throw new Error(`bench --train: ${problems[0].message}`);
  const lora = { rank: 8, alpha: 16, targets: LORA_TARGETS };
  const r = await fineTune(engine, examples, undefined, { lora, epochs: opts.epochs ?? 2, batchSize, learningRate: 1e-3, seed: 0 });
  return {
    rank: lora.rank,
    targets: lora.targets,
    conversations: n,
    batchSize,
    steps: r.steps,
    totalTokens: r.totalTokens,
    trainedTokens: r.trainedTokens,
    wallMs: Math.round(r.wallMs),
    tokensPerSecond: Math.round((r.totalTokens * 1000) / r.wallMs),
    trainedTokensPerSecond: Math.round((r.trainedTokens * 1000) / r.wallMs),
    msPerStep: Math.round(r.wallMs / r.steps),
    firstLoss: r.trainLoss[0],
    lastLoss: r.trainLoss.at(-1)!,
  };
}

export function formatTrainScenario(r: TrainScenarioResult): string {
  return [
    `LoRA training: rank ${r.rank} on ${r.targets.join(',')}, ${r.conversations} conversations, batch ${r.batchSize}, ${r.steps} steps (no llama.cpp peer)`,
    '| tokens/s (all) | trained tokens/s | ms per step | wall s | loss first → last |',
    '|---|---|---|---|---|',
    `| ${r.tokensPerSecond} | ${r.trainedTokensPerSecond} | ${r.msPerStep} | ${(r.wallMs / 1000).toFixed(1)} | ${r.firstLoss.toFixed(3)} → ${r.lastLoss.toFixed(3)} |`,
  ].join('\n');
}
