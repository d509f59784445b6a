/**
 * `GET /v1/models` and `GET /v1/models/{id}`: the specialists the caller's plan includes, as models, and
 * the account's own fine-tuned models (owned by the account) on plans with fine-tuned adapters.
 */
import type { Caller } from '../access.ts';
import type { Outcome, RequestContext, ServiceParts } from '../context.ts';
import { json } from '../context.ts';
import { modelNotFound, permissionDenied } from '../errors.ts';
import { fineTuningFor } from '../fine-tuning/access.ts';
import { fineTunedModelFor } from '../fine-tuning/serving.ts';
import type { FineTunedModelRecord } from '../fine-tuning/records.ts';
import { accountOwner, isFineTunedModelName, modelIdFor, specialistForModel } from '../model-names.ts';

function model(id: string, svc: ServiceParts) {
  return { id, object: 'model', created: Math.floor(svc.startedAt / 1000), owned_by: 'svc' };
}

export async function listModels(svc: ServiceParts, caller: Caller): Promise<Outcome> {
  const data = svc.specialists
    .names()
    .filter((n) => caller.plan.specialists.includes(n))
    .map((n) => model(modelIdFor(n), svc));
  const ft = svc.fineTuning;
  if (ft && caller.plan.features.fineTunedAdapters) {
    const own = await ft.store.listFineTunedModels(caller.account.id);
    data.push(...own.filter((m) => caller.plan.specialists.includes(m.specialist)).map(fineTunedModel));
  }
  return json({ object: 'list', data });
}

function fineTunedModel(m: FineTunedModelRecord) {
  return { id: m.name, object: 'model', created: Math.floor(m.createdAt / 1000), owned_by: accountOwner(m.accountId) };
}

/** `DELETE /v1/models/{id}`: the account's own fine-tuned model (the specialists are not the caller's to delete). */
export async function deleteModel(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const id = ctx.params.id ?? '';
  const ft = fineTuningFor(svc, caller);
  if (!isFineTunedModelName(id)) {
    if (specialistForModel(id, (n) => svc.specialists.has(n))) throw permissionDenied(`The model ${id} is one of the service's specialists; only your own fine-tuned models (ft:…) can be deleted.`, 'model_not_deletable', 'model');
    throw modelNotFound(id, 'model');
  }
  if (!(await ft.store.deleteFineTunedModel(caller.account.id, id))) throw modelNotFound(id, 'model');
  ft.adapters?.forget(caller.account.id, id);
  return json({ id, object: 'model', deleted: true });
}

/** Any accepted model name can be retrieved; the object echoes the name asked for, as the provider does. */
export async function retrieveModel(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const id = ctx.params.id ?? '';
  if (isFineTunedModelName(id)) return json(fineTunedModel(await fineTunedModelFor(svc, caller, id, 'model')));
  const name = specialistForModel(id, (n) => svc.specialists.has(n));
  if (!name) throw modelNotFound(id, 'model');
  svc.access.requireSpecialist(caller, name, 'model');
  return json(model(id, svc));
}
