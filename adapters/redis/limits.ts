/**
 * The per-minute limits and the monthly allowance's holds on Redis, shared by every replica (ioredis;
 * the scripts are in scripts.ts). A replica's holds carry an expiry it keeps pushing forward while their
 * requests run, so the holds of a replica that dies free themselves within one hold lifetime.
 *
 * When Redis cannot be reached every check fails fast with 503 backend_unavailable and Retry-After (no
 * offline queue, a short command timeout): a request is never let through unlimited, never answered
 * with a 500, and service resumes by itself once the client has reconnected.
 */
import { Redis } from 'ioredis';
import { backendUnavailable } from '../../protocol/errors.ts';
import type { Limits, QuotaHold, QuotaScope } from '../../protocol/limits.ts';
import { randomBase62 } from '../../protocol/ids.ts';
import type { Logger } from '../../protocol/logger.ts';
import { WINDOW_MS, type RateLimitSlot, type RateLimitState, type TakeResult } from '../../protocol/rate-limiter.ts';
import type { Awaitable } from '../../protocol/store.ts';
import { COUNTED, HOLD, PEEK, REFRESH, TAKE } from './scripts.ts';

export interface RedisLimitsOptions {
  url: string;
  logger: Logger;
  /** A hold's lifetime without a refresh (default 30 s; $SVC_QUOTA_HOLD_TTL_MS). A dead replica's holds last this long. */
  holdTtlMs?: number;
  /** Prefix of every key (default `svc:`), for a Redis shared with other applications. */
  prefix?: string;
  /** How long one command may take before the request gets a 503 (default 1000 ms). */
  commandTimeoutMs?: number;
}

type Scripted = Redis & {
  svcTake(key: string, limit: number, window: number, member: string): Promise<[number, number, number, number, string, number]>;
  svcPeek(key: string, limit: number, window: number): Promise<[number, number]>;
  svcHold(holds: string, epoch: string, seen: number, used: number, limit: number, id: string, ttl: number, keep: number): Promise<number>;
  svcCounted(holds: string, epoch: string, id: string, keep: number): Promise<number>;
  svcRefresh(holds: string, ttl: number, ...ids: string[]): Promise<number>;
};

const DAY_MS = 86_400_000;

export class RedisLimits implements Limits {
  private readonly redis: Scripted;
  private readonly prefix: string;
  private readonly holdTtlMs: number;
  /** This replica's live holds, by holds key, to refresh. */
  private readonly live = new Map<string, Set<string>>();
  private readonly refresher: ReturnType<typeof setInterval>;
  private readonly logger: Logger;
  private down = false;

  constructor(opts: RedisLimitsOptions) {
    this.prefix = opts.prefix ?? 'svc:';
    this.holdTtlMs = opts.holdTtlMs ?? (Number(process.env.SVC_QUOTA_HOLD_TTL_MS) || 30_000);
    this.logger = opts.logger;
    this.redis = new Redis(opts.url, {
      // Fail at once while disconnected rather than queueing: the caller gets a 503, not a hang.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 1000,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(100 * times, 2000),
      lazyConnect: false,
    }) as Scripted;
    this.redis.defineCommand('svcTake', { numberOfKeys: 1, lua: TAKE });
    this.redis.defineCommand('svcPeek', { numberOfKeys: 1, lua: PEEK });
    this.redis.defineCommand('svcHold', { numberOfKeys: 2, lua: HOLD });
    this.redis.defineCommand('svcCounted', { numberOfKeys: 2, lua: COUNTED });
    this.redis.defineCommand('svcRefresh', { numberOfKeys: 1, lua: REFRESH });
    this.redis.on('error', (e: Error) => {
      if (!this.down) this.logger.warn({ err: e.message }, 'redis unreachable: limited requests get 503 until it is back');
      this.down = true;
    });
    this.redis.on('ready', () => {
      if (this.down) this.logger.info({}, 'redis reachable again');
      this.down = false;
    });
    this.refresher = setInterval(() => void this.refresh(), Math.max(100, Math.floor(this.holdTtlMs / 3)));
    this.refresher.unref();
  }

  /** Resolves once connected (for start-up checks); rejects after `timeoutMs`. */
  async ready(timeoutMs = 5000): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`cannot connect to redis within ${timeoutMs} ms`)), timeoutMs);
      this.redis.once('ready', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  async take(key: string, limit: number): Promise<TakeResult> {
    const [allowed, remaining, resetMs, retryAfterMs, member, at] = await this.call(() => this.redis.svcTake(this.rpmKey(key), limit, WINDOW_MS, randomBase62(8)));
    const state: RateLimitState = { limit, remaining: Number(remaining), resetMs: Number(resetMs) };
    if (Number(allowed) === 1) return { allowed: true, slot: { key, at: Number(at), id: String(member) }, ...state };
    return { allowed: false, retryAfterMs: Number(retryAfterMs), ...state };
  }

  async peek(key: string, limit: number): Promise<RateLimitState> {
    const [remaining, resetMs] = await this.call(() => this.redis.svcPeek(this.rpmKey(key), limit, WINDOW_MS));
    return { limit, remaining: Number(remaining), resetMs: Number(resetMs) };
  }

  async refund(slot: RateLimitSlot): Promise<void> {
    if (slot.id) await this.call(() => this.redis.zrem(this.rpmKey(slot.key), slot.id!));
  }

  async fits(scope: QuotaScope, used: () => Awaitable<number>): Promise<boolean> {
    return (await this.check(scope, used, '')) === 1;
  }

  async hold(scope: QuotaScope, used: () => Awaitable<number>): Promise<QuotaHold | null> {
    const id = `h_${randomBase62(16)}`;
    if ((await this.check(scope, used, id)) !== 1) return null;
    const { holds, epoch } = this.quotaKeys(scope);
    const keep = scope.periodEnd - Date.now() + DAY_MS;
    const mine = this.live.get(holds) ?? new Set<string>();
    mine.add(id);
    this.live.set(holds, mine);
    let done = false;
    const forget = () => {
      done = true;
      mine.delete(id);
      if (mine.size === 0) this.live.delete(holds);
    };
    return {
      counted: async () => {
        if (done) return;
        forget();
        await this.call(() => this.redis.svcCounted(holds, epoch, id, keep));
      },
      release: async () => {
        if (done) return;
        forget();
        await this.call(() => this.redis.zrem(holds, id));
      },
    };
  }

  async close(): Promise<void> {
    clearInterval(this.refresher);
    this.redis.disconnect();
  }

  /** One check (and take, given an id), read again while holds are counted under it. */
  private async check(scope: QuotaScope, used: () => Awaitable<number>, id: string): Promise<number> {
    const { holds, epoch } = this.quotaKeys(scope);
    const keep = scope.periodEnd - Date.now() + DAY_MS;
    for (let attempt = 0; attempt < 20; attempt++) {
      const seen = Number((await this.call(() => this.redis.get(epoch))) ?? 0);
      const n = await used();
      const r = Number(await this.call(() => this.redis.svcHold(holds, epoch, seen, n, scope.limit, id, this.holdTtlMs, keep)));
      if (r !== -1) return r;
    }
    // Counted holds keep racing the store read: say so rather than guess.
    throw backendUnavailable('usage counter (it is changing too fast to read)', 1);
  }

  private async refresh(): Promise<void> {
    if (this.live.size === 0 || this.redis.status !== 'ready') return;
    try {
      await Promise.all([...this.live].map(([holds, ids]) => this.redis.svcRefresh(holds, this.holdTtlMs, ...ids)));
    } catch (e) {
      this.logger.warn({ err: (e as Error).message }, 'could not refresh quota holds');
    }
  }

  private async call<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      this.logger.debug({ err: (e as Error).message }, 'redis command failed');
      throw backendUnavailable('shared rate limiter (Redis)', 2);
    }
  }

  private rpmKey(key: string): string {
    return `${this.prefix}rpm:${key}`;
  }

  private quotaKeys(scope: QuotaScope): { holds: string; epoch: string } {
    // One hash tag per key and period, so both keys live on one Redis Cluster slot and one script may touch both.
    const tag = `{${scope.keyId}:${scope.periodStart}}`;
    return { holds: `${this.prefix}holds:${tag}`, epoch: `${this.prefix}counted:${tag}` };
  }
}
