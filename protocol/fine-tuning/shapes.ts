/** Stored records as the provider's objects: `file`, `fine_tuning.job`, `fine_tuning.job.event`, `list`. */
import { accountOwner } from '../model-names.ts';
import type { FileRecord, JobEventRecord, JobRecord } from './records.ts';

const seconds = (ms: number) => Math.floor(ms / 1000);

export function fileObject(f: FileRecord) {
  return { id: f.id, object: 'file', bytes: f.bytes, created_at: seconds(f.createdAt), filename: f.filename, purpose: f.purpose, status: 'processed', status_details: null, expires_at: null };
}

export function jobObject(j: JobRecord) {
  const h = j.hyperparameters;
  const hyperparameters = { n_epochs: h.nEpochs, batch_size: h.batchSize, learning_rate_multiplier: h.learningRateMultiplier, lora_rank: h.loraRank, lora_alpha: h.loraAlpha };
  return {
    id: j.id,
    object: 'fine_tuning.job',
    created_at: seconds(j.createdAt),
    error: j.error,
    fine_tuned_model: j.fineTunedModel,
    finished_at: j.finishedAt === null ? null : seconds(j.finishedAt),
    hyperparameters,
    model: j.model,
    organization_id: accountOwner(j.accountId),
    result_files: [],
    seed: j.seed,
    status: j.status,
    trained_tokens: j.trainedTokens,
    training_file: j.trainingFile,
    validation_file: j.validationFile,
    estimated_finish: null,
    integrations: null,
    metadata: null,
    method: { type: 'supervised', supervised: { hyperparameters } },
    user_provided_suffix: j.suffix,
  };
}

export function eventObject(e: JobEventRecord) {
  return { id: e.id, object: 'fine_tuning.job.event', created_at: seconds(e.createdAt), level: e.level, message: e.message, data: e.data ?? {}, type: e.type };
}

/** A cursor page: one more item than asked for was read, to know whether there are more. */
export function listObject<T extends { id: string }, O>(items: readonly T[], limit: number, shape: (t: T) => O) {
  const page = items.slice(0, limit);
  return { object: 'list', data: page.map(shape), first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null, has_more: items.length > limit };
}
