/**
 * A training checkpoint: the trainer's state (adapter weights, AdamW moments, step count; opaque here)
 * and the loop's position and history, so a run stopped at any checkpoint continues exactly as if it had
 * never stopped. The run's settings and a hash of its data are kept too: a checkpoint resumes only the
 * run that made it, and refusing any other names the setting that differs.
 *
 * Layout: "SVCFTCK1", u32 LE length of a UTF-8 JSON header, the header, then the trainer's state.
 */
import { z } from 'zod';
import type { FineTuneSettings, TrainingExample } from './types.ts';

const MAGIC = 'SVCFTCK1';

/** What identifies a run: a checkpoint from a run with any of these different is refused. */
const runIdentity = z.object({
  rank: z.number(),
  alpha: z.number(),
  targets: z.array(z.string()),
  epochs: z.number(),
  batchSize: z.number(),
  learningRate: z.number(),
  seed: z.number(),
  optimizer: z.record(z.string(), z.number()),
  trainExamples: z.number(),
  trainData: z.string(),
  validationData: z.string(),
});
export type RunIdentity = z.infer<typeof runIdentity>;

const header = z.object({
  /** Optimizer steps done; the next step is this one (0-based). */
  step: z.number().int().nonnegative(),
  run: runIdentity,
  trainLoss: z.array(z.number()),
  validationLoss: z.array(z.number()),
  trainedTokens: z.number(),
  totalTokens: z.number(),
  /** Training time before this checkpoint, all earlier runs together. */
  wallMs: z.number(),
});
export type CheckpointPosition = z.infer<typeof header>;

export interface Checkpoint {
  position: CheckpointPosition;
  trainerState: Uint8Array;
}

export function encodeCheckpoint(c: Checkpoint): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(c.position));
  const out = new Uint8Array(MAGIC.length + 4 + json.length + c.trainerState.length);
  out.set(new TextEncoder().encode(MAGIC), 0);
  new DataView(out.buffer).setUint32(MAGIC.length, json.length, true);
  out.set(json, MAGIC.length + 4);
  out.set(c.trainerState, MAGIC.length + 4 + json.length);
  return out;
}

export function decodeCheckpoint(bytes: Uint8Array): Checkpoint {
  const magic = new TextDecoder().decode(bytes.subarray(0, MAGIC.length));
  if (bytes.length < MAGIC.length + 4 || magic !== MAGIC) throw new Error('not a fine-tuning checkpoint (it does not start with SVCFTCK1)');
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(MAGIC.length, true);
  const start = MAGIC.length + 4;
  if (start + length > bytes.length) throw new Error(`fine-tuning checkpoint is truncated (${bytes.length} bytes, its header alone needs ${start + length})`);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes.subarray(start, start + length)));
  } catch {
    throw new Error('fine-tuning checkpoint header is not valid JSON');
  }
  const parsed = header.safeParse(value);
  if (!parsed.success) throw new Error(`fine-tuning checkpoint header: ${parsed.error.issues[0].path.join('.')}: ${parsed.error.issues[0].message}`);
  return { position: parsed.data, trainerState: bytes.slice(start + length) };
}

export function runIdentityOf(settings: FineTuneSettings, optimizer: Readonly<Record<string, number>>, train: readonly TrainingExample[], validation: readonly TrainingExample[] | undefined): RunIdentity {
  return {
    rank: settings.lora.rank,
    alpha: settings.lora.alpha,
    targets: [...settings.lora.targets],
    epochs: settings.epochs,
    batchSize: settings.batchSize,
    learningRate: settings.learningRate,
    seed: settings.seed,
    optimizer: { ...optimizer },
    trainExamples: train.length,
    trainData: hashExamples(train),
    validationData: validation ? hashExamples(validation) : '',
  };
}

/**
 * A checkpoint that cannot continue this run (another run's settings or data, a corrupt or foreign file).
 * A caller that owns the checkpoint (the API's job runner) starts over; the CLI reports it.
 */
export class CheckpointMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointMismatchError';
  }
}

/** Throws naming the first setting in which the checkpoint's run differs from this one. */
export function checkSameRun(checkpoint: RunIdentity, current: RunIdentity): void {
  for (const key of Object.keys(current) as (keyof RunIdentity)[]) {
    const a = JSON.stringify(checkpoint[key]);
    const b = JSON.stringify(current[key]);
    if (a === b) continue;
    if (key === 'trainData' || key === 'validationData' || key === 'trainExamples') {
      throw new Error(`the checkpoint was made on different ${key === 'validationData' ? 'validation' : 'training'} data; resume with the same data files and model, or start over`);
    }
    throw new Error(`the checkpoint was made with ${key} ${a}, not ${b}; resume with the same settings, or start over`);
  }
}

/** FNV-1a (32 bit) over every example's tokens and mask, with lengths, as 8 hex digits. */
export function hashExamples(examples: readonly TrainingExample[]): string {
  let h = 0x811c9dc5;
  const mix = (v: number) => {
    for (let s = 0; s < 32; s += 8) h = Math.imul(h ^ ((v >>> s) & 0xff), 0x01000193);
  };
  for (const ex of examples) {
    mix(ex.tokens.length);
    for (const t of ex.tokens) mix(t);
    for (const m of ex.lossMask) mix(m);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}
