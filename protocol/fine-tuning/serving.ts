/**
 * A fine-tuned model as `model` on chat completions and /v1/infer: the account's own model (another
 * account's is a 404, exactly as for a name that does not exist), on a plan that still includes
 * fine-tuned adapters, run as its base specialist with the adapter loaded on this replica.
 */
import type { Caller } from '../access.ts';
import type { Ticket } from '../admission.ts';
import type { ServiceParts } from '../context.ts';
import { AdapterCapacityError, EngineInputError } from '../../engine/types.ts';
import { ApiError, invalidRequest, modelNotFound } from '../errors.ts';
import type { AdapterLease } from './adapter-cache.ts';
import type { FineTunedModelRecord } from './records.ts';

export async function fineTunedModelFor(svc: ServiceParts, caller: Caller, name: string, param: string): Promise<FineTunedModelRecord> {
  const model = svc.fineTuning ? await svc.fineTuning.store.fineTunedModel(caller.account.id, name) : undefined;
  if (!model) throw modelNotFound(name, param);
  svc.access.requireFeature(caller, 'fineTunedAdapters', param);
  svc.access.requireSpecialist(caller, model.specialist, param);
  return model;
}

/** The model's adapter on this replica's engine, held until the returned ticket is released. */
export async function withAdapter(svc: ServiceParts, caller: Caller, model: FineTunedModelRecord, ticket: Ticket, param: string): Promise<{ ticket: Ticket; adapter: string }> {
  let lease: AdapterLease | undefined;
  try {
    const adapters = svc.fineTuning?.adapters;
    if (!adapters) throw new ApiError(503, 'server_error', 'This server cannot serve fine-tuned models right now (it runs without a trainer to load adapters); retry later.', { code: 'fine_tuned_model_unavailable', retryAfterSeconds: 30 });
    lease = await adapters.acquire(caller.account.id, model.name).catch((e: unknown) => {
      if (e instanceof AdapterCapacityError) {
        throw new ApiError(503, 'server_error', `This server is running as many fine-tuned models at once as its engine holds (${e.limit}); retry shortly.`, { code: 'adapter_capacity', retryAfterSeconds: 2 });
      }
      // The engine refuses the file: the server now runs another base model than the one it was trained on.
      if (e instanceof EngineInputError) {
        throw invalidRequest(`The fine-tuned model ${model.name} cannot run on the model this server serves now (${e.message}); fine-tune it again.`, param, 'model_incompatible');
      }
      throw e;
    });
    if (!lease) throw modelNotFound(model.name, param);
  } catch (e) {
    ticket.release();
    throw e;
  }
  const held = lease;
  return {
    adapter: held.id,
    ticket: {
      release: () => {
        held.release();
        ticket.release();
      },
    },
  };
}
