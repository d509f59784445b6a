import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../protocol/clock.ts';
import { RateLimiter } from '../../protocol/rate-limiter.ts';

describe('per-minute rate limiter', () => {
  it('allows a burst of the whole limit, then one request per 60/limit seconds', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 20; i++) {
      const r = rl.take('k', 20);
      expect(r.allowed).toBe(true);
      expect(r.remaining).toBe(19 - i);
    }
    const denied = rl.take('k', 20);
    expect(denied.allowed).toBe(false);
    if (!denied.allowed) expect(denied.retryAfterMs).toBeCloseTo(3000, 5);
    expect(denied.resetMs).toBeCloseTo(60_000, 5);

    clock.advance(2999);
    expect(rl.take('k', 20).allowed).toBe(false);
    clock.advance(1);
    expect(rl.take('k', 20).allowed).toBe(true);
    expect(rl.take('k', 20).allowed).toBe(false);
  });

  it('keeps keys apart and refills completely after a minute', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 3; i++) rl.take('a', 3);
    expect(rl.take('a', 3).allowed).toBe(false);
    expect(rl.take('b', 3).allowed).toBe(true);
    clock.advance(60_000);
    expect(rl.peek('a', 3)).toEqual({ limit: 3, remaining: 3, resetMs: 0 });
    expect(rl.take('a', 3).resetMs).toBeCloseTo(20_000, 5);
  });

  it('peek does not use a request', () => {
    const rl = new RateLimiter(new ManualClock());
    rl.peek('a', 1);
    rl.peek('a', 1);
    expect(rl.take('a', 1).allowed).toBe(true);
    expect(rl.peek('a', 1).remaining).toBe(0);
  });

  it('applies a plan change at once, counting what was used', () => {
    const rl = new RateLimiter(new ManualClock());
    rl.take('a', 2);
    rl.take('a', 2);
    expect(rl.take('a', 2).allowed).toBe(false);
    expect(rl.take('a', 100).remaining).toBe(97);
    expect(rl.take('a', 3).allowed).toBe(false);
  });
});
