/**
 * `GET /v1/usage`: this key's requests and tokens in the current billing period; on plans with
 * fine-tuning, also `fine_tuning`: tokens trained on by the key's jobs that finished in the period
 * (apart from tokens_used, which counts inference).
 */
import type { Caller } from '../access.ts';
import { billingPeriodAt } from '../billing-period.ts';
import type { Outcome, ServiceParts } from '../context.ts';
import { json } from '../context.ts';

export async function usage(svc: ServiceParts, caller: Caller): Promise<Outcome> {
  const period = billingPeriodAt(svc.clock.now());
  const rows = await svc.store.usageInPeriod(caller.key.id, period.start);
  // Every specialist of the plan appears (0 when unused), plus any used before a plan change.
  const bySpecialist: Record<string, number> = {};
  for (const name of svc.specialists.names()) if (caller.plan.specialists.includes(name)) bySpecialist[name] = 0;
  let requests = 0;
  let tokens = 0;
  for (const r of rows) {
    bySpecialist[r.specialist] = (bySpecialist[r.specialist] ?? 0) + r.requests;
    requests += r.requests;
    tokens += r.promptTokens + r.completionTokens;
  }
  const ft = svc.fineTuning && caller.plan.features.fineTunedAdapters ? await svc.fineTuning.store.trainingUsage(caller.key.id, period.start) : undefined;
  return json({
    period_start: new Date(period.start).toISOString(),
    period_end: new Date(period.end).toISOString(),
    requests_used: requests,
    requests_limit: caller.limits.perMonth,
    tokens_used: tokens,
    by_specialist: bySpecialist,
    ...(ft ? { fine_tuning: { trained_tokens: ft.trainedTokens, jobs: ft.jobs } } : {}),
  });
}
