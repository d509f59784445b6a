import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../protocol/clock.ts';
import { RateLimiter } from '../../protocol/rate-limiter.ts';

describe('per-minute rate limiter (sliding window)', () => {
  it('allows the whole limit at once, then nothing until the first of them is a minute old', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 20; i++) {
      const r = rl.take('k', 20);
      expect(r.allowed).toBe(true);
      expect(r.remaining).toBe(19 - i);
    }
    const denied = rl.take('k', 20);
    expect(denied.allowed).toBe(false);
    if (!denied.allowed) expect(denied.retryAfterMs).toBe(60_000);
    expect(denied.resetMs).toBe(60_000);

    // A leaky bucket would let one through every 3 s here; the window holds 20 until they age out.
    clock.advance(30_000);
    expect(rl.take('k', 20).allowed).toBe(false);
    clock.advance(29_999);
    expect(rl.take('k', 20).allowed).toBe(false);
    clock.advance(1);
    // All 20 were made at the same instant, so all 20 places come back together.
    for (let i = 0; i < 20; i++) expect(rl.take('k', 20).allowed).toBe(true);
    expect(rl.take('k', 20).allowed).toBe(false);
  });

  it('frees each place exactly 60 s after the request that used it', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    rl.take('k', 2);
    clock.advance(10_000);
    rl.take('k', 2);
    clock.advance(5_000);
    const denied = rl.take('k', 2);
    expect(denied.allowed).toBe(false);
    if (!denied.allowed) expect(denied.retryAfterMs).toBe(45_000);
    expect(denied.resetMs).toBe(55_000);
    clock.advance(44_999);
    expect(rl.take('k', 2).allowed).toBe(false);
    clock.advance(1);
    const ok = rl.take('k', 2);
    expect(ok.allowed).toBe(true);
    expect(ok.remaining).toBe(0);
    expect(ok.resetMs).toBe(60_000);
  });

  it('keeps keys apart and frees everything a minute after the last request', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    for (let i = 0; i < 3; i++) rl.take('a', 3);
    expect(rl.take('a', 3).allowed).toBe(false);
    expect(rl.take('b', 3).allowed).toBe(true);
    clock.advance(60_000);
    expect(rl.peek('a', 3)).toEqual({ limit: 3, remaining: 3, resetMs: 0 });
    expect(rl.take('a', 3).resetMs).toBe(60_000);
  });

  it('peek and refused requests use no place', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    rl.peek('a', 1);
    rl.peek('a', 1);
    expect(rl.take('a', 1).allowed).toBe(true);
    expect(rl.peek('a', 1).remaining).toBe(0);
    for (let i = 0; i < 10; i++) {
      clock.advance(1000);
      expect(rl.take('a', 1).allowed).toBe(false);
    }
    clock.advance(50_000);
    expect(rl.take('a', 1).allowed).toBe(true);
  });

  it('applies a plan change at once, counting what the window holds', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    rl.take('a', 2);
    clock.advance(1000);
    rl.take('a', 2);
    expect(rl.take('a', 2).allowed).toBe(false);
    expect(rl.take('a', 100).remaining).toBe(97);
    // Lowered to 1 with 3 in the window: a place opens only when all 3 have aged out, the last at 61 s.
    const lowered = rl.take('a', 1);
    expect(lowered.allowed).toBe(false);
    if (!lowered.allowed) expect(lowered.retryAfterMs).toBe(60_000);
  });

  it('refund gives back an accepted place, once', () => {
    const clock = new ManualClock();
    const rl = new RateLimiter(clock);
    const first = rl.take('a', 2);
    clock.advance(1000);
    const second = rl.take('a', 2);
    expect(rl.take('a', 2).allowed).toBe(false);
    if (!second.allowed) throw new Error('unreachable');
    rl.refund(second.slot);
    rl.refund(second.slot);
    expect(rl.peek('a', 2).remaining).toBe(1);
    const third = rl.take('a', 2);
    expect(third.allowed).toBe(true);
    expect(rl.take('a', 2).allowed).toBe(false);
    if (!first.allowed) throw new Error('unreachable');
    // A refund of a place that has already left the window changes nothing.
    clock.advance(59_500);
    rl.refund(first.slot);
    expect(rl.peek('a', 2).remaining).toBe(1);
  });
});
