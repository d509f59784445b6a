/**
 * Plans: which specialists and features each includes and its request limits, from one plain JSON file
 * (config/plans.json) validated at load. A plan whose limits are null (Enterprise) takes them from the account.
 */
import { z } from 'zod';

/** For a plan file that does not say; config/plans.json sets it on every plan. */
export const DEFAULT_MAX_CONCURRENT = 4;

const featuresSchema = z.strictObject({
  /** `tools` / `functions` on chat completions. */
  functionCalling: z.boolean(),
  /** `response_format` of type `json_object` or `json_schema`. */
  jsonSchema: z.boolean(),
  /** Fine-tuned adapters on the shared model (later). */
  fineTunedAdapters: z.boolean(),
});

const planSchema = z.strictObject({
  id: z.string().regex(/^[a-z][a-z0-9-]*$/, 'lowercase letters, digits and -'),
  name: z.string().min(1),
  /** null: set per account (`svc plan set <key> <plan> --rpm N --monthly N`). */
  requestsPerMinute: z.number().int().positive().nullable(),
  requestsPerMonth: z.number().int().positive().nullable(),
  /** Inference requests one key may have running or waiting at once (more: 429 concurrency_limit_exceeded). */
  maxConcurrent: z.number().int().positive().max(1000).default(DEFAULT_MAX_CONCURRENT),
  specialists: z.array(z.string().min(1)).min(1),
  features: featuresSchema,
});

const plansFileSchema = z
  .strictObject({
    $comment: z.string().optional(),
    /** Every account starts with a trial of this many days. */
    trialDays: z.number().int().positive(),
    plans: z.array(planSchema).min(1),
  })
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    file.plans.forEach((p, i) => {
      if (seen.has(p.id)) ctx.addIssue({ code: 'custom', path: ['plans', i, 'id'], message: `plan id "${p.id}" appears twice` });
      seen.add(p.id);
      if ((p.requestsPerMinute === null) !== (p.requestsPerMonth === null)) {
        ctx.addIssue({ code: 'custom', path: ['plans', i], message: 'requestsPerMinute and requestsPerMonth are both numbers or both null (set per account)' });
      }
    });
  });

export type Plan = z.infer<typeof planSchema>;
export type Feature = keyof Plan['features'];
export type PlansFile = z.infer<typeof plansFileSchema>;

export const FEATURE_LABELS: Record<Feature, string> = {
  functionCalling: 'function calling (tools / functions)',
  jsonSchema: 'JSON mode (response_format json_object / json_schema)',
  fineTunedAdapters: 'fine-tuned adapters',
};

export interface RequestLimits {
  perMinute: number;
  perMonth: number;
}

/** Per-account limits, used by plans whose own limits are null. */
export interface LimitOverrides {
  rpmLimit: number | null;
  monthlyLimit: number | null;
}

export class PlanCatalog {
  private readonly byId: ReadonlyMap<string, Plan>;

  constructor(readonly file: PlansFile) {
    this.byId = new Map(file.plans.map((p) => [p.id, p]));
  }

  get trialDays(): number {
    return this.file.trialDays;
  }

  get(id: string): Plan | undefined {
    return this.byId.get(id);
  }

  ids(): string[] {
    return this.file.plans.map((p) => p.id);
  }

  /** Throws when a plan names a specialist the registry does not know (a config mistake, caught at start). */
  checkSpecialists(known: (name: string) => boolean): void {
    for (const p of this.file.plans) {
      const unknown = p.specialists.filter((s) => !known(s));
      if (unknown.length) throw new Error(`plan "${p.id}" names unknown specialists: ${unknown.join(', ')}`);
    }
  }
}

/** The limits that apply to an account on this plan, or null when the plan needs per-account limits that are not set. */
export function effectiveLimits(plan: Plan, overrides: LimitOverrides): RequestLimits | null {
  if (plan.requestsPerMinute !== null && plan.requestsPerMonth !== null) {
    return { perMinute: plan.requestsPerMinute, perMonth: plan.requestsPerMonth };
  }
  if (overrides.rpmLimit === null || overrides.monthlyLimit === null) return null;
  return { perMinute: overrides.rpmLimit, perMonth: overrides.monthlyLimit };
}

/** The catalog from the plans file's parsed JSON (reading it is the caller's job: adapters/config-node.ts). */
export function parsePlans(raw: unknown, source = 'plans'): PlanCatalog {
  const parsed = plansFileSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${source}:\n${z.prettifyError(parsed.error)}`);
  return new PlanCatalog(parsed.data);
}
