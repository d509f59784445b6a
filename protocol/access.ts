/**
 * Who is calling and what they may do: key check, trial, plan contents, the per-minute limit and the
 * monthly allowance. Every check reads the account afresh, so `svc plan set` applies to the next request.
 */
import { billingPeriodAt } from './billing-period.ts';
import type { Clock } from './clock.ts';
import { ApiError, invalidApiKey, permissionDenied } from './errors.ts';
import { randomBase62 } from './ids.ts';
import { hashesEqual, parseKey } from './keys.ts';
import type { Logger } from './logger.ts';
import { effectiveLimits, FEATURE_LABELS, type Feature, type Plan, type PlanCatalog, type RequestLimits } from './plans.ts';
import type { Limits, QuotaScope } from './limits.ts';
import type { RateLimitSlot, RateLimitState } from './rate-limiter.ts';
import type { AccountRecord, KeyRecord, Store } from './store.ts';

export interface Caller {
  key: KeyRecord;
  account: AccountRecord;
  plan: Plan;
  limits: RequestLimits;
  /** The per-minute limit's state as of this request, for the rate-limit headers. */
  rateLimit: RateLimitState;
  /** This request's place in the per-minute window, once takeRequest() accepted it. */
  rateSlot?: RateLimitSlot;
}

/** One admitted request's hold on the monthly allowance until it is counted or dropped. */
export interface Reservation {
  /** Counts the request (once) with its tokens; durable when the promise resolves. */
  record(promptTokens: number, completionTokens: number): Promise<void>;
  /** Gives the hold back; after record() it only ends the hold. */
  release(): Promise<void>;
}

// Compared against when no key matches, so a miss costs what a hit does.
const DUMMY_HASH = new Uint8Array(32);

export class AccessControl {
  constructor(
    private readonly store: Store,
    private readonly plans: PlanCatalog,
    /** The per-minute window and the allowance's holds (admitted, not yet counted requests). */
    private readonly limits: Limits,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** The caller behind an `Authorization` header value; 401 for a missing, malformed, unknown or revoked key. */
  async authenticate(authorization: string | undefined): Promise<Caller> {
    const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!authorization?.trim()) {
      throw invalidApiKey("You didn't provide an API key. Send it in the Authorization header using Bearer auth: 'Authorization: Bearer YOUR_KEY'.");
    }
    if (!match) throw invalidApiKey("The Authorization header must be 'Bearer YOUR_KEY'.");
    const presented = parseKey(match[1]);
    const found = presented ? await this.store.findKey(presented.prefix) : undefined;
    const equal = hashesEqual(presented?.hash ?? DUMMY_HASH, found?.key.hash ?? DUMMY_HASH);
    if (!presented || !found || !equal) throw invalidApiKey('Incorrect API key provided.');
    if (found.key.revokedAt !== null) throw invalidApiKey('This API key has been revoked.');

    const plan = this.plans.get(found.account.plan);
    if (!plan) {
      this.logger.error({ accountId: found.account.id, plan: found.account.plan }, 'account is on a plan missing from the plans config');
      throw new Error(`unknown plan ${found.account.plan}`);
    }
    const limits = effectiveLimits(plan, found.account);
    if (!limits) {
      throw permissionDenied(`The ${plan.name} plan's request limits have not been set for this account yet; contact support.`, 'plan_limits_not_set');
    }
    return { key: found.key, account: found.account, plan, limits, rateLimit: await this.limits.peek(rateKey(found.key), limits.perMinute) };
  }

  /** 403 once the trial has ended on an account that has not paid. */
  requireActive(caller: Caller): void {
    const { account } = caller;
    if (!account.paid && this.clock.now() >= account.trialEndsAt) {
      throw permissionDenied(
        `The free trial of this account ended at ${new Date(account.trialEndsAt).toISOString()}. Choose a paid plan to continue.`,
        'trial_expired',
      );
    }
  }

  requireSpecialist(caller: Caller, specialist: string, param: string): void {
    if (caller.plan.specialists.includes(specialist)) return;
    const withIt = this.plans.ids().map((id) => this.plans.get(id)!).filter((p) => p.specialists.includes(specialist)).map((p) => p.name);
    throw permissionDenied(
      `Your plan (${caller.plan.name}) does not include the '${specialist}' specialist.${withIt.length ? ` Plans that include it: ${withIt.join(', ')}.` : ''}`,
      'specialist_not_in_plan',
      param,
    );
  }

  requireFeature(caller: Caller, feature: Feature, param: string): void {
    if (caller.plan.features[feature]) return;
    throw permissionDenied(`Your plan (${caller.plan.name}) does not include ${FEATURE_LABELS[feature]}.`, 'feature_not_in_plan', param);
  }

  /** Uses one request of the per-minute limit; 429 with Retry-After when none is left. */
  async takeRequest(caller: Caller): Promise<void> {
    const r = await this.limits.take(rateKey(caller.key), caller.limits.perMinute);
    caller.rateLimit = { limit: r.limit, remaining: r.remaining, resetMs: r.resetMs };
    if (r.allowed) caller.rateSlot = r.slot;
    else {
      // Rounded up: a retry after this many seconds is accepted, a retry one second earlier is not.
      const seconds = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
      throw new ApiError(429, 'rate_limit_error', `Rate limit reached: ${r.limit} requests per minute for this key. Retry in ${seconds}s.`, {
        code: 'rate_limit_exceeded',
        retryAfterSeconds: seconds,
      });
    }
  }

  /** Gives back the per-minute place of a request that never reached the model (left while queued). */
  async refundRequest(caller: Caller): Promise<void> {
    if (!caller.rateSlot) return;
    const slot = caller.rateSlot;
    caller.rateSlot = undefined;
    await this.limits.refund(slot);
  }

  /** 429 insufficient_quota when the monthly allowance is used up; checked before the model is touched. */
  async requireQuota(caller: Caller): Promise<void> {
    const scope = this.scope(caller);
    if (!(await this.limits.fits(scope, () => this.store.requestsInPeriod(scope.keyId, scope.periodStart)))) throw quotaExhausted(scope, this.clock.now());
  }

  /**
   * Holds one request of the monthly allowance (checked again: others may have been admitted meanwhile,
   * here or on another replica).
   */
  async reserve(caller: Caller, specialist: string): Promise<Reservation> {
    const requestId = `use_${randomBase62(24)}`;
    const scope = this.scope(caller);
    const hold = await this.limits.hold(scope, () => this.store.requestsInPeriod(scope.keyId, scope.periodStart));
    if (!hold) throw quotaExhausted(scope, this.clock.now());
    let recorded = false;
    let released = false;
    return {
      record: async (promptTokens, completionTokens) => {
        if (recorded) return;
        recorded = true;
        try {
          await this.store.recordUsage({ requestId, keyId: caller.key.id, periodStart: scope.periodStart, specialist, promptTokens, completionTokens });
        } catch (e) {
          recorded = false;
          throw e;
        }
        released = true;
        // Counted in the store: a hold that cannot be ended now expires by itself (and errs on the safe side until then).
        await Promise.resolve()
          .then(() => hold.counted())
          .catch((e: unknown) => this.logger.warn({ err: e }, 'could not end a quota hold after counting its request'));
      },
      // Never rejects: called from cleanup paths, and a hold left behind expires by itself.
      release: async () => {
        if (released) return;
        released = true;
        await Promise.resolve()
          .then(() => hold.release())
          .catch((e: unknown) => this.logger.warn({ err: e }, 'could not release a quota hold'));
      },
    };
  }

  private scope(caller: Caller): QuotaScope {
    const period = billingPeriodAt(this.clock.now());
    return { keyId: caller.key.id, periodStart: period.start, periodEnd: period.end, limit: caller.limits.perMonth };
  }
}

function quotaExhausted(scope: QuotaScope, now: number): ApiError {
  return new ApiError(429, 'insufficient_quota', `This key has used its ${scope.limit} requests for the billing period ending ${new Date(scope.periodEnd).toISOString()}.`, {
    code: 'insufficient_quota',
    retryAfterSeconds: Math.max(1, Math.ceil((scope.periodEnd - now) / 1000)),
    retryable: false,
  });
}

function rateKey(key: KeyRecord): string {
  return String(key.id);
}
