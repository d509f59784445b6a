/**
 * Admission in front of the engine: at most `maxRunning` generations run at once, at most `maxQueued`
 * more wait (first come, first served), and one key holds at most its plan's `maxConcurrent` of those
 * places. Beyond that a request is refused at once (503 `overloaded`, or 429 when it is the key's own
 * concurrency) instead of waiting without bound. The engine has its own waiting list; keeping the queue
 * here means its length is ours to bound and a caller who leaves is out of it at once.
 */
import type { Caller } from './access.ts';
import { concurrencyLimitExceeded, overloaded } from './errors.ts';

export interface AdmissionLimits {
  /** Generations handed to the engine at once (match the engine's sequence slots). */
  maxRunning: number;
  /** Requests that may wait for a running place; beyond this, 503 `overloaded`. */
  maxQueued: number;
}

export const DEFAULT_ADMISSION: AdmissionLimits = { maxRunning: 8, maxQueued: 64 };

/** A place among the running generations; release() gives it to the next in the queue. Idempotent. */
export interface Ticket {
  release(): void;
}

export interface Applicant {
  /** Whose concurrency this counts against (the API key). */
  key: string;
  /** The plan's `maxConcurrent`. */
  maxConcurrent: number;
  planName: string;
}

interface Waiter {
  key: string;
  grant: () => void;
}

export class Admission {
  private running = 0;
  private readonly queue: Waiter[] = [];
  /** Places (running or queued) per key. */
  private readonly perKey = new Map<string, number>();

  constructor(readonly limits: AdmissionLimits = DEFAULT_ADMISSION) {
    for (const [name, v] of Object.entries(limits)) {
      if (!Number.isInteger(v) || v < (name === 'maxQueued' ? 0 : 1)) throw new Error(`admission ${name} must be an integer ≥ ${name === 'maxQueued' ? 0 : 1}, got ${v}`);
    }
  }

  get runningCount(): number {
    return this.running;
  }

  get queuedCount(): number {
    return this.queue.length;
  }

  /**
   * The most places one key may hold: its plan's number, but never more than half of all places, so
   * a single key cannot fill the queue however the plans and server options are set.
   */
  keyLimit(maxConcurrent: number): number {
    return Math.max(1, Math.min(maxConcurrent, Math.floor((this.limits.maxRunning + this.limits.maxQueued) / 2)));
  }

  /**
   * Resolves with a running place, at once or after waiting in the queue. Throws at once when the key or
   * the queue is full; rejects with the signal's reason when it aborts while waiting (the place is freed).
   */
  admit(who: Applicant, signal: AbortSignal): Promise<Ticket> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const held = this.perKey.get(who.key) ?? 0;
    const limit = this.keyLimit(who.maxConcurrent);
    if (held >= limit) return Promise.reject(concurrencyLimitExceeded(limit, who.planName));
    if (this.running < this.limits.maxRunning) {
      this.take(who.key);
      this.running++;
      return Promise.resolve(this.ticket(who.key));
    }
    if (this.queue.length >= this.limits.maxQueued) return Promise.reject(overloaded(this.limits.maxQueued));

    this.take(who.key);
    return new Promise<Ticket>((resolve, reject) => {
      const waiter: Waiter = {
        key: who.key,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.ticket(who.key));
        },
      };
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i < 0) return;
        this.queue.splice(i, 1);
        this.give(who.key);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  private ticket(key: string): Ticket {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.give(key);
        const next = this.queue.shift();
        // The running place passes straight to the next waiter; only with nobody waiting does it free up.
        if (next) next.grant();
        else this.running--;
      },
    };
  }

  private take(key: string): void {
    this.perKey.set(key, (this.perKey.get(key) ?? 0) + 1);
  }

  private give(key: string): void {
    const n = (this.perKey.get(key) ?? 1) - 1;
    if (n > 0) this.perKey.set(key, n);
    else this.perKey.delete(key);
  }
}

/** A caller as admission counts it: per key, under its plan's limit. */
export function applicantFor(caller: Caller): Applicant {
  return { key: String(caller.key.id), maxConcurrent: caller.plan.maxConcurrent, planName: caller.plan.name };
}
