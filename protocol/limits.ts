/**
 * The limits shared by every request of a key: the per-minute window and the monthly allowance's
 * in-flight holds. In one process they live in memory (MemoryLimits, the default); replicas share them
 * on Redis (adapters/redis). Either way the check and the take are one atomic step. A backend that cannot
 * answer throws an ApiError 503 with Retry-After: a request is never let through unlimited.
 */
import type { Clock } from './clock.ts';
import { RateLimiter, type RateLimitSlot, type RateLimitState, type TakeResult } from './rate-limiter.ts';
import type { Awaitable } from './store.ts';

/** One key's allowance in one billing period. */
export interface QuotaScope {
  keyId: number;
  periodStart: number;
  periodEnd: number;
  /** Requests the period allows. */
  limit: number;
}

/** An admitted request's place in the allowance until it is counted or given back. */
export interface QuotaHold {
  /** The store has recorded the request: the hold becomes part of the period's count. */
  counted(): Awaitable<void>;
  /** The request was not counted: the place is free again. */
  release(): Awaitable<void>;
}

export interface Limits {
  /** Uses one request of the key's per-minute window if it has room. */
  take(key: string, limit: number): Awaitable<TakeResult>;
  peek(key: string, limit: number): Awaitable<RateLimitState>;
  /** Gives back a place of a request that never reached the model. */
  refund(slot: RateLimitSlot): Awaitable<void>;
  /** Whether one more request fits: the store's count (`used`) plus the requests held now, below the limit. */
  fits(scope: QuotaScope, used: () => Awaitable<number>): Awaitable<boolean>;
  /** Holds one request of the allowance, or null when it does not fit (checked and taken atomically). */
  hold(scope: QuotaScope, used: () => Awaitable<number>): Awaitable<QuotaHold | null>;
  close?(): Awaitable<void>;
}

/** The limits of a single process: the sliding-window log and a count of holds per key and period. */
export class MemoryLimits implements Limits {
  private readonly limiter: RateLimiter;
  private readonly held = new Map<string, number>();
  /** Holds counted per slot so far: a count read from the store while one was counted is read again. */
  private readonly countedSoFar = new Map<string, number>();

  constructor(clock: Clock) {
    this.limiter = new RateLimiter(clock);
  }

  take(key: string, limit: number): TakeResult {
    return this.limiter.take(key, limit);
  }

  peek(key: string, limit: number): RateLimitState {
    return this.limiter.peek(key, limit);
  }

  refund(slot: RateLimitSlot): void {
    this.limiter.refund(slot);
  }

  async fits(scope: QuotaScope, used: () => Awaitable<number>): Promise<boolean> {
    return (await used()) + (this.held.get(slotOf(scope)) ?? 0) < scope.limit;
  }

  async hold(scope: QuotaScope, used: () => Awaitable<number>): Promise<QuotaHold | null> {
    const slot = slotOf(scope);
    let n: number;
    // A hold counted while the store was being read may be in neither the count nor the holds: read again.
    for (;;) {
      const epoch = this.countedSoFar.get(slot) ?? 0;
      n = await used();
      if ((this.countedSoFar.get(slot) ?? 0) === epoch) break;
    }
    const held = this.held.get(slot) ?? 0;
    if (n + held >= scope.limit) return null;
    this.held.set(slot, held + 1);
    let done = false;
    const drop = (counted: boolean) => {
      if (done) return;
      done = true;
      const left = (this.held.get(slot) ?? 1) - 1;
      if (left > 0) this.held.set(slot, left);
      else this.held.delete(slot);
      if (counted) this.countedSoFar.set(slot, (this.countedSoFar.get(slot) ?? 0) + 1);
    };
    // Counted: the store's count now includes it, so the hold goes.
    return { counted: () => drop(true), release: () => drop(false) };
  }
}

function slotOf(scope: QuotaScope): string {
  return `${scope.keyId}:${scope.periodStart}`;
}
