/**
 * The per-minute limit means per minute: over random schedules of attempts, no 60-second window ever
 * holds more accepted requests than the limit, nothing is refused that the window had room for, and
 * Retry-After names exactly the first instant a request is accepted again. Checked against a brute-force
 * count of the accepted times, with the protocol's manual clock.
 */
import { describe, expect, it } from 'vitest';
import { AccessControl, type Caller } from '../../protocol/access.ts';
import { ManualClock } from '../../protocol/clock.ts';
import { ApiError } from '../../protocol/errors.ts';
import { MemoryLimits } from '../../protocol/limits.ts';
import { RateLimiter, WINDOW_MS } from '../../protocol/rate-limiter.ts';
import { rng } from '../helpers/random.ts';

/** Accepted requests in the window ending at `now` (the half-open (now − 60 s, now]). */
const inWindow = (accepted: readonly number[], now: number) => accepted.filter((t) => t > now - WINDOW_MS).length;

/** Largest number of accepted times inside any window [t, t + 60 s), t running over every start that matters. */
function busiestWindow(accepted: readonly number[]): number {
  let best = 0;
  for (const start of accepted) best = Math.max(best, accepted.filter((t) => t >= start && t < start + WINDOW_MS).length);
  return best;
}

describe('sliding window against a brute-force count', () => {
  for (const [limit, seed] of [[20, 1], [20, 2], [3, 3], [100, 4], [1, 5]] as const) {
    it(`limit ${limit}, schedule ${seed}`, () => {
      const rand = rng(seed);
      const clock = new ManualClock();
      const rl = new RateLimiter(clock);
      const accepted: number[] = [];
      for (let i = 0; i < 3000; i++) {
        // Bursts of same-instant attempts, short gaps and long pauses, so windows fill and drain.
        const r = rand();
        clock.advance(r < 0.3 ? 0 : r < 0.9 ? Math.floor(rand() * (4 * WINDOW_MS) / limit) : Math.floor(rand() * 90_000));
        const now = clock.now();
        const room = inWindow(accepted, now) < limit;
        const got = rl.take('k', limit);
        expect(got.allowed).toBe(room);
        if (got.allowed) {
          accepted.push(now);
          expect(got.remaining).toBe(limit - inWindow(accepted, now));
        } else {
          // Exactly when: refused a millisecond before, accepted at that instant (by the brute-force count).
          expect(got.retryAfterMs).toBeGreaterThan(0);
          expect(inWindow(accepted, now + got.retryAfterMs - 1)).toBe(limit);
          expect(inWindow(accepted, now + got.retryAfterMs)).toBeLessThan(limit);
          expect(got.remaining).toBe(0);
        }
      }
      expect(accepted.length).toBeGreaterThan(limit * 5);
      expect(busiestWindow(accepted)).toBeLessThanOrEqual(limit);
    });
  }

  it('Retry-After (whole seconds) is the first whole second at which the request is accepted', async () => {
    const rand = rng(7);
    for (let trial = 0; trial < 200; trial++) {
      const clock = new ManualClock();
      const access = new AccessControl(undefined as never, undefined as never, new MemoryLimits(clock), clock, undefined as never);
      const caller = { key: { id: 1 }, limits: { perMinute: 20, perMonth: 1e9 } } as unknown as Caller;
      let retry: number | undefined;
      while (retry === undefined) {
        clock.advance(Math.floor(rand() * 6000));
        try {
          await access.takeRequest(caller);
        } catch (e) {
          expect(e).toBeInstanceOf(ApiError);
          retry = (e as ApiError).retryAfterSeconds;
        }
      }
      const refusedAt = clock.now();
      // One second short of Retry-After is still refused (unless the wait was under a second), at it accepted.
      if (retry! > 1) {
        clock.set(refusedAt + (retry! - 1) * 1000);
        await expect(access.takeRequest(caller)).rejects.toThrow(ApiError);
      }
      clock.set(refusedAt + retry! * 1000);
      await expect(access.takeRequest(caller)).resolves.toBeUndefined();
    }
  });
});
