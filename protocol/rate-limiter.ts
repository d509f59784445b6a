/**
 * Requests-per-minute limiting per key, as a leaky bucket: each request adds one to the key's level,
 * which drains continuously at `limit` per minute, and a request is allowed while the level stays within
 * `limit`. A key can burst its whole minute's allowance, then gets one request every 60/limit seconds.
 * The level counts what was used, so a plan change applies at once in both directions. State lives in
 * memory: a restart forgets at most a minute of history.
 */
import type { Clock } from './clock.ts';

export interface RateLimitState {
  limit: number;
  /** Whole requests that may be made right now. */
  remaining: number;
  /** Milliseconds until the bucket is empty again, i.e. the whole limit is available (`x-ratelimit-reset-requests`). */
  resetMs: number;
}

export type TakeResult = (RateLimitState & { allowed: true }) | (RateLimitState & { allowed: false; retryAfterMs: number });

interface Bucket {
  level: number;
  at: number;
}

const MINUTE_MS = 60_000;
/** Float draining can leave 1.0000001 used; this keeps whole requests whole. */
const EPSILON = 1e-9;
/** Above this many tracked keys, buckets that have drained completely are dropped (they equal "absent"). */
const PRUNE_ABOVE = 10_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly clock: Clock) {}

  /** Uses one request if one is available. */
  take(key: string, limit: number): TakeResult {
    const now = this.clock.now();
    const b = this.drained(key, limit, now);
    if (b.level + 1 <= limit + EPSILON) {
      b.level += 1;
      this.buckets.set(key, b);
      this.prune(now, key);
      return { allowed: true, ...state(b.level, limit) };
    }
    this.buckets.set(key, b);
    return { allowed: false, retryAfterMs: ((b.level + 1 - limit) * MINUTE_MS) / limit, ...state(b.level, limit) };
  }

  /** The state without using anything (for responses that do not count against the limit). */
  peek(key: string, limit: number): RateLimitState {
    return state(this.drained(key, limit, this.clock.now()).level, limit);
  }

  private drained(key: string, limit: number, now: number): Bucket {
    const b = this.buckets.get(key);
    if (!b) return { level: 0, at: now };
    const elapsed = Math.max(0, now - b.at);
    return { level: Math.max(0, b.level - (elapsed * limit) / MINUTE_MS), at: now };
  }

  private prune(now: number, keep: string): void {
    if (this.buckets.size <= PRUNE_ABOVE) return;
    for (const [k, b] of this.buckets) {
      // Any bucket idle for a minute has drained, whatever its limit.
      if (k !== keep && now - b.at >= MINUTE_MS) this.buckets.delete(k);
    }
  }
}

function state(level: number, limit: number): RateLimitState {
  return { limit, remaining: Math.max(0, Math.floor(limit - level + EPSILON)), resetMs: Math.max(0, (level * MINUTE_MS) / limit) };
}
