/** `GET /v1/models` and `GET /v1/models/{id}`: the specialists the caller's plan includes, as models. */
import type { Caller } from '../access.ts';
import type { Outcome, RequestContext, ServiceParts } from '../context.ts';
import { json } from '../context.ts';
import { modelNotFound } from '../errors.ts';
import { modelIdFor, specialistForModel } from '../model-names.ts';

function model(id: string, svc: ServiceParts) {
  return { id, object: 'model', created: Math.floor(svc.startedAt / 1000), owned_by: 'svc' };
}

export async function listModels(svc: ServiceParts, caller: Caller): Promise<Outcome> {
  const data = svc.specialists
    .names()
    .filter((n) => caller.plan.specialists.includes(n))
    .map((n) => model(modelIdFor(n), svc));
  return json({ object: 'list', data });
}

/** Any accepted model name can be retrieved; the object echoes the name asked for, as the provider does. */
export async function retrieveModel(svc: ServiceParts, caller: Caller, ctx: RequestContext): Promise<Outcome> {
  const id = ctx.params.id ?? '';
  const name = specialistForModel(id, (n) => svc.specialists.has(n));
  if (!name) throw modelNotFound(id, 'model');
  svc.access.requireSpecialist(caller, name, 'model');
  return json(model(id, svc));
}
