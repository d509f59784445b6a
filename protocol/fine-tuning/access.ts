/** Who may use fine-tuning: plans with `features.fineTunedAdapters`, on a server whose store keeps it. */
import type { Caller } from '../access.ts';
import type { ServiceParts } from '../context.ts';
import { ApiError, permissionDenied } from '../errors.ts';
import { FEATURE_LABELS } from '../plans.ts';
import type { FineTuning } from './service-parts.ts';

export function fineTuningFor(svc: ServiceParts, caller: Caller): FineTuning {
  if (!caller.plan.features.fineTunedAdapters) {
    const withIt = svc.plans
      .ids()
      .map((id) => svc.plans.get(id)!)
      .filter((p) => p.features.fineTunedAdapters)
      .map((p) => p.name);
    throw permissionDenied(
      `Your plan (${caller.plan.name}) does not include ${FEATURE_LABELS.fineTunedAdapters}: files and fine-tuning jobs are not available to it.${withIt.length ? ` Plans that include it: ${withIt.join(', ')}.` : ''}`,
      'feature_not_in_plan',
    );
  }
  if (!svc.fineTuning) throw new ApiError(404, 'invalid_request_error', 'Fine-tuning is not available on this server (its store does not keep files and jobs).', { code: 'fine_tuning_unavailable' });
  return svc.fineTuning;
}
