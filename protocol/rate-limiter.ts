/**
 * Requests-per-minute limiting per key, as a sliding-window log: the times of a key's accepted requests
 * over the last 60 s are kept, and a request is accepted while fewer than `limit` of them fall inside
 * the window (now − 60 s, now]. So no 60-second window ever holds more than `limit` accepted requests,
 * which a bucket with refill (leaky bucket, GCRA with burst) cannot promise: those allow a full burst
 * and then refill on top of it within the same minute. A refused request leaves no trace. The log is
 * per key and in memory (at most `limit` entries a key); a restart forgets at most a minute.
 */
import type { Clock } from './clock.ts';

export interface RateLimitState {
  limit: number;
  /** Requests that may be made right now. */
  remaining: number;
  /** Milliseconds until the window holds no request, i.e. the whole limit is available (`x-ratelimit-reset-requests`). */
  resetMs: number;
}

/** An accepted request's place in the log, to give back with refund(). */
export interface RateLimitSlot {
  key: string;
  at: number;
  /** The entry's name where the log is shared (Redis). */
  id?: string;
}

export type TakeResult =
  | (RateLimitState & { allowed: true; slot: RateLimitSlot })
  | (RateLimitState & { allowed: false; /** Exactly when a request would next be accepted, from now. */ retryAfterMs: number });

export const WINDOW_MS = 60_000;
/** Above this many tracked keys, logs whose entries have all left the window are dropped (they equal "absent"). */
const PRUNE_ABOVE = 10_000;

/** Accepted times in order; `head` skips the ones that have left the window without shifting the array. */
class Log {
  times: number[] = [];
  head = 0;

  expire(now: number): void {
    while (this.head < this.times.length && this.times[this.head] <= now - WINDOW_MS) this.head++;
    // Compacting once half the array is dead keeps expire() amortised O(1) per request.
    if (this.head > 32 && this.head * 2 >= this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
  }

  get count(): number {
    return this.times.length - this.head;
  }

  at(i: number): number {
    return this.times[this.head + i];
  }
}

export class RateLimiter {
  private readonly logs = new Map<string, Log>();

  constructor(private readonly clock: Clock) {}

  /** Uses one request if the window has room. */
  take(key: string, limit: number): TakeResult {
    const now = this.clock.now();
    const log = this.logs.get(key) ?? new Log();
    log.expire(now);
    if (log.count < limit) {
      log.times.push(now);
      this.logs.set(key, log);
      this.prune(now, key);
      return { allowed: true, slot: { key, at: now }, ...state(log, limit, now) };
    }
    // The request is accepted once enough entries leave that fewer than `limit` remain: the
    // (count − limit + 1)th oldest leaves at its time + 60 s. A lowered plan limit waits for more of them.
    const freeing = log.count > 0 && limit > 0 ? log.at(log.count - limit) : now - WINDOW_MS;
    return { allowed: false, retryAfterMs: Math.max(0, freeing + WINDOW_MS - now), ...state(log, limit, now) };
  }

  /** The state without using anything (for responses that do not count against the limit). */
  peek(key: string, limit: number): RateLimitState {
    const now = this.clock.now();
    const log = this.logs.get(key);
    if (!log) return { limit, remaining: limit, resetMs: 0 };
    log.expire(now);
    return state(log, limit, now);
  }

  /**
   * Gives an accepted request's place back, for a request that never reached the model (abandoned
   * while queued): it was not used, so it must not hold a place in the window. No-op when it has left.
   */
  refund(slot: RateLimitSlot): void {
    const log = this.logs.get(slot.key);
    if (!log) return;
    const i = log.times.lastIndexOf(slot.at);
    if (i >= log.head) log.times.splice(i, 1);
  }

  private prune(now: number, keep: string): void {
    if (this.logs.size <= PRUNE_ABOVE) return;
    for (const [k, log] of this.logs) {
      if (k === keep) continue;
      log.expire(now);
      if (log.count === 0) this.logs.delete(k);
    }
  }
}

function state(log: Log, limit: number, now: number): RateLimitState {
  const n = log.count;
  return { limit, remaining: Math.max(0, limit - n), resetMs: n === 0 ? 0 : log.at(n - 1) + WINDOW_MS - now };
}
