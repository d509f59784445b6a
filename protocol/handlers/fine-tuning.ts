/**
 * `/v1/fine_tuning/jobs`: create, list, retrieve, events, cancel, in the provider's shapes. A job is
 * created in `validating_files` and the runner (protocol/fine-tuning/runner.ts) takes it from there:
 * queued → running → succeeded | failed; a cancel ends it at any point before it has finished.
 */
import type { Caller } from '../access.ts';
import { json, type Outcome, type RequestContext, type ServiceParts } from '../context.ts';
import { ApiError, invalidRequest, modelNotFound } from '../errors.ts';
import { fineTuningFor } from '../fine-tuning/access.ts';
import { OPEN_STATUSES, type FileRecord, type JobRecord } from '../fine-tuning/records.ts';
import { parseJobRequest, parsePage, resolveHyperparameters } from '../fine-tuning/requests.ts';
import { eventObject, jobObject, listObject } from '../fine-tuning/shapes.ts';
import type { FineTuning } from '../fine-tuning/service-parts.ts';
import { randomBase62 } from '../ids.ts';
import { isFineTunedModelName, MAX_SUFFIX_CHARS, sanitiseSuffix, specialistForModel } from '../model-names.ts';
import { FINE_TUNE_PURPOSE } from './files.ts';

/** Jobs of one account not yet finished; more wait for one to end (they run one at a time anyway). */
export const MAX_OPEN_JOBS_PER_ACCOUNT = 5;

function jobNotFound(id: string): ApiError {
  return new ApiError(404, 'invalid_request_error', `No such fine-tuning job: ${id.slice(0, 128)}`, { code: 'fine_tuning_job_not_found', param: null });
}

export async function createJob(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  await svc.access.takeRequest(caller);
  const req = parseJobRequest(await ctx.readBody());
  if (isFineTunedModelName(req.model)) {
    throw invalidRequest(`Fine-tuning a fine-tuned model (${req.model.slice(0, 128)}) is not available; fine-tune its base model (svc-<specialist>) on all the data instead.`, 'model', 'model_not_available');
  }
  const specialist = specialistForModel(req.model, (n) => svc.specialists.has(n));
  if (!specialist) throw modelNotFound(req.model, 'model');
  svc.access.requireSpecialist(caller, specialist, 'model');
  const training = await trainingData(ft, caller, req.trainingFile, 'training_file');
  if (req.validationFile !== null) await trainingData(ft, caller, req.validationFile, 'validation_file');
  const open = await ft.store.openJobCount(caller.account.id);
  if (open >= MAX_OPEN_JOBS_PER_ACCOUNT) {
    throw new ApiError(429, 'rate_limit_error', `This account already has ${open} fine-tuning jobs that have not finished (at most ${MAX_OPEN_JOBS_PER_ACCOUNT}); wait for one to end or cancel one.`, {
      code: 'too_many_fine_tuning_jobs',
      retryAfterSeconds: 60,
    });
  }

  let suffix: string | null = null;
  if (req.suffix !== null) {
    suffix = sanitiseSuffix(req.suffix);
    if (!suffix) throw invalidRequest(`Invalid 'suffix': it needs at least one letter or digit (it becomes part of the model name; at most ${MAX_SUFFIX_CHARS} of [a-z0-9_-] are kept).`, 'suffix');
  }
  const now = svc.clock.now();
  const job: JobRecord = {
    id: `ftjob-${randomBase62(24)}`,
    accountId: caller.account.id,
    keyId: caller.key.id,
    model: req.model,
    specialist,
    trainingFile: req.trainingFile,
    validationFile: req.validationFile,
    hyperparameters: resolveHyperparameters(req.hyperparameters, training.lines),
    suffix,
    seed: req.seed ?? crypto.getRandomValues(new Uint32Array(1))[0] >>> 1,
    status: 'validating_files',
    fineTunedModel: null,
    error: null,
    trainedTokens: null,
    createdAt: now,
    finishedAt: null,
  };
  await ft.store.createJob(job, { jobId: job.id, createdAt: now, level: 'info', message: `Created fine-tuning job: ${job.id}`, type: 'message', data: {} });
  ft.runner?.wake();
  return json(jobObject(job));
}

export async function listJobs(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  const page = parsePage(ctx.query);
  const jobs = await ft.store.listJobs(caller.account.id, { after: page.after, limit: page.limit + 1 });
  return json(listObject(jobs, page.limit, jobObject));
}

export async function retrieveJob(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  return json(jobObject(await ownJob(ft, caller, ctx)));
}

export async function listJobEvents(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  const job = await ownJob(ft, caller, ctx);
  const page = parsePage(ctx.query);
  const events = await ft.store.listJobEvents(job.id, { after: page.after, limit: page.limit + 1 });
  return json(listObject(events, page.limit, eventObject));
}

export async function cancelJob(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const ft = fineTuningFor(svc, caller);
  await svc.access.takeRequest(caller);
  const job = await ownJob(ft, caller, ctx);
  const now = svc.clock.now();
  const cancelled = await ft.store.transitionJob(job.id, OPEN_STATUSES, 'cancelled', {
    finishedAt: now,
    event: { jobId: job.id, createdAt: now, level: 'info', message: 'Fine-tuning job cancelled', type: 'message', data: {} },
  });
  if (!cancelled) {
    const current = (await ft.store.job(caller.account.id, job.id)) ?? job;
    throw invalidRequest(`Job ${job.id} has already finished (status ${current.status}) and cannot be cancelled.`, null, 'job_already_finished');
  }
  // A job training on this replica stops at its next step; on another replica, at its next lease renewal.
  ft.runner?.cancelled(job.id);
  return json(jobObject((await ft.store.job(caller.account.id, job.id))!));
}

async function ownJob(ft: FineTuning, caller: Caller, ctx: RequestContext): Promise<JobRecord> {
  const id = ctx.params.id ?? '';
  const job = await ft.store.job(caller.account.id, id);
  if (!job) throw jobNotFound(id);
  return job;
}

async function trainingData(ft: FineTuning, caller: Caller, id: string, param: string): Promise<FileRecord> {
  const file = await ft.store.file(caller.account.id, id);
  if (!file) throw invalidRequest(`Invalid '${param}': no file ${id.slice(0, 128)} belongs to this account (upload it with POST /v1/files, purpose "${FINE_TUNE_PURPOSE}").`, param, 'file_not_found');
  if (file.purpose !== FINE_TUNE_PURPOSE) throw invalidRequest(`Invalid '${param}': file ${id} has purpose "${file.purpose}", not "${FINE_TUNE_PURPOSE}".`, param, 'invalid_file_purpose');
  return file;
}
