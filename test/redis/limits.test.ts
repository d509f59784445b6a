/**
 * The shared limits on a real Redis, with two RedisLimits standing for two replicas: the per-minute
 * window and the monthly allowance are exact across them, a dead replica's holds expire, and an outage
 * is a 503 backend_unavailable (never a pass) with service back once Redis is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLimits } from '../../adapters/redis/limits.ts';
import { ApiError } from '../../protocol/errors.ts';
import { silentLogger } from '../../protocol/logger.ts';
import type { QuotaScope } from '../../protocol/limits.ts';
import { redisAvailable, REDIS_MISSING, startRedis, type RedisServer } from '../helpers/redis-server.ts';

if (!redisAvailable) console.warn(`skipping the Redis tests: ${REDIS_MISSING}`);

describe.skipIf(!redisAvailable)('limits on Redis', () => {
  let redis: RedisServer;
  let a: RedisLimits;
  let b: RedisLimits;
  beforeAll(async () => {
    redis = await startRedis();
    a = new RedisLimits({ url: redis.url, logger: silentLogger, holdTtlMs: 600 });
    b = new RedisLimits({ url: redis.url, logger: silentLogger, holdTtlMs: 600 });
    await Promise.all([a.ready(), b.ready()]);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.close();
  });

  it('accepts exactly the per-minute limit across replicas, and refunds', async () => {
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).take('k1', 20)));
    const accepted = results.filter((r) => r.allowed);
    expect(accepted).toHaveLength(20);
    const refused = results.find((r) => !r.allowed)!;
    expect(refused.allowed).toBe(false);
    if (!refused.allowed) {
      expect(refused.retryAfterMs).toBeGreaterThan(55_000);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    expect((await a.peek('k1', 20)).remaining).toBe(0);
    const slot = accepted[0].allowed ? accepted[0].slot : undefined;
    await b.refund(slot!);
    expect((await a.peek('k1', 20)).remaining).toBe(1);
    expect((await a.take('k1', 20)).allowed).toBe(true);
    expect((await b.take('k1', 20)).allowed).toBe(false);
  });

  it('holds exactly the monthly allowance across replicas while the store count moves', async () => {
    const scope: QuotaScope = { keyId: 7, periodStart: 1000, periodEnd: Date.now() + 86_400_000, limit: 25 };
    let stored = 5;
    // The store's count, read slowly, as a database would be.
    const used = async () => {
      const n = stored;
      await new Promise((r) => setTimeout(r, Math.random() * 5));
      return n;
    };
    const holds = (await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).hold(scope, used)))).filter((h) => h !== null);
    expect(holds).toHaveLength(20);
    // Completing requests: counted in the store, then the hold ends; new requests race them and never overrun.
    const more = await Promise.all([
      ...holds.slice(0, 10).map(async (h) => {
        stored++;
        await h!.counted();
      }),
      ...Array.from({ length: 20 }, () => a.hold(scope, used)),
    ]);
    const extra = more.filter((h) => h && typeof h === 'object');
    expect(extra).toHaveLength(0);
    await Promise.all(holds.slice(10, 15).map((h) => h!.release()));
    const after = (await Promise.all(Array.from({ length: 20 }, () => b.hold(scope, used)))).filter((h) => h !== null);
    expect(after).toHaveLength(5);
    expect(await a.fits(scope, used)).toBe(false);
  });

  it("frees a dead replica's holds after their lifetime, and keeps a live replica's", async () => {
    const scope: QuotaScope = { keyId: 8, periodStart: 1000, periodEnd: Date.now() + 86_400_000, limit: 2 };
    const dying = new RedisLimits({ url: redis.url, logger: silentLogger, holdTtlMs: 600 });
    await dying.ready();
    expect(await dying.hold(scope, () => 0)).not.toBeNull();
    expect(await a.hold(scope, () => 0)).not.toBeNull();
    expect(await b.hold(scope, () => 0)).toBeNull();
    await dying.close();
    await new Promise((r) => setTimeout(r, 1200));
    // The dead one's hold expired; a's was refreshed and still counts.
    expect(await b.hold(scope, () => 0)).not.toBeNull();
    expect(await b.hold(scope, () => 0)).toBeNull();
  });

  it('answers 503 backend_unavailable while Redis is down, and serves again when it is back', async () => {
    await redis.stop();
    const down = await a.take('k2', 5).then(
      () => null,
      (e: unknown) => e,
    );
    expect(down).toBeInstanceOf(ApiError);
    expect(down).toMatchObject({ status: 503, code: 'backend_unavailable' });
    expect((down as ApiError).retryAfterSeconds).toBeGreaterThan(0);
    await expect(a.hold({ keyId: 9, periodStart: 0, periodEnd: Date.now() + 1e6, limit: 5 }, () => 0)).rejects.toMatchObject({ status: 503 });
    await redis.start();
    await a.ready(10_000);
    expect((await a.take('k2', 5)).allowed).toBe(true);
  });
});
