/**
 * Requests of the files and fine-tuning endpoints, in the provider's shapes: `POST /v1/fine_tuning/jobs`
 * (hyperparameters at the top level, or under `method.supervised` as newer clients send them, plus our
 * `lora_rank` / `lora_alpha`) and the cursor pagination of the list endpoints (`after`, `limit`).
 */
import { z } from 'zod';
import { invalidRequest } from '../errors.ts';
import { issuesToError } from '../requests/issues.ts';
import type { JobHyperparameters, Page } from './records.ts';

const auto = z.literal('auto');
const hyperparameters = z.strictObject({
  n_epochs: z.union([auto, z.number().int().min(1).max(50)]).optional(),
  batch_size: z.union([auto, z.number().int().min(1).max(256)]).nullish(),
  learning_rate_multiplier: z.union([auto, z.number().gt(0).max(10)]).optional(),
  lora_rank: z.number().int().min(1).max(64).optional(),
  lora_alpha: z.number().gt(0).max(1024).optional(),
});

const jobSchema = z.strictObject({
  model: z.string().min(1).max(256),
  training_file: z.string().min(1).max(128),
  validation_file: z.string().min(1).max(128).nullish(),
  hyperparameters: hyperparameters.optional(),
  method: z
    .strictObject({
      type: z.literal('supervised', { error: 'only "supervised" fine-tuning is available' }),
      supervised: z.strictObject({ hyperparameters: hyperparameters.optional() }).optional(),
    })
    .optional(),
  suffix: z.string().max(64).nullish(),
  seed: z.number().int().min(0).max(2147483647).nullish(),
  metadata: z.record(z.string().max(64), z.string().max(512)).nullish(),
  integrations: z.array(z.unknown()).max(0, 'integrations are not available on this service').nullish(),
});

export type HyperparameterRequest = z.infer<typeof hyperparameters>;

export interface JobRequest {
  model: string;
  trainingFile: string;
  validationFile: string | null;
  hyperparameters: HyperparameterRequest;
  suffix: string | null;
  seed: number | null;
}

export function parseJobRequest(body: unknown): JobRequest {
  const parsed = jobSchema.safeParse(body);
  if (!parsed.success) throw issuesToError(parsed.error.issues, body);
  const r = parsed.data;
  const top = r.hyperparameters;
  const nested = r.method?.supervised?.hyperparameters;
  if (top && nested) throw invalidRequest("Give hyperparameters either at the top level or in 'method.supervised.hyperparameters', not both.", 'hyperparameters');
  return {
    model: r.model,
    trainingFile: r.training_file,
    validationFile: r.validation_file ?? null,
    hyperparameters: top ?? nested ?? {},
    suffix: r.suffix ?? null,
    seed: r.seed ?? null,
  };
}

/** Learning rate at multiplier 1: a usual peak for LoRA with AdamW. */
export const BASE_LEARNING_RATE = 2e-4;
export const DEFAULT_LORA_RANK = 8;
export const DEFAULT_LORA_ALPHA = 16;

/** 'auto' and absent values resolved for a training file of `examples` conversations. */
export function resolveHyperparameters(h: HyperparameterRequest, examples: number): JobHyperparameters {
  const num = <T>(v: T | 'auto' | null | undefined): T | undefined => (v === 'auto' || v === null ? undefined : v);
  return {
    // Small sets need more passes to learn a format; large ones fewer.
    nEpochs: num(h.n_epochs) ?? Math.min(10, Math.max(3, Math.ceil(100 / Math.max(1, examples)))),
    batchSize: Math.min(num(h.batch_size) ?? Math.max(1, Math.min(8, Math.round(examples / 16))), Math.max(1, examples)),
    learningRateMultiplier: num(h.learning_rate_multiplier) ?? 1,
    loraRank: h.lora_rank ?? DEFAULT_LORA_RANK,
    loraAlpha: h.lora_alpha ?? DEFAULT_LORA_ALPHA,
  };
}

export const DEFAULT_PAGE_LIMIT = 20;
export const MAX_PAGE_LIMIT = 100;

const pageSchema = z.object({
  after: z.string().min(1).max(128).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_LIMIT).optional(),
});

/** `after` and `limit` from the query string. */
export function parsePage(query: Readonly<Record<string, string>> | undefined): Page {
  const parsed = pageSchema.safeParse({ after: query?.after, limit: query?.limit });
  if (!parsed.success) throw issuesToError(parsed.error.issues, query ?? {});
  return { after: parsed.data.after, limit: parsed.data.limit ?? DEFAULT_PAGE_LIMIT };
}
