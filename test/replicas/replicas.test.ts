/**
 * Three `svc serve` replicas sharing one Redis and one PostgreSQL, all real processes and servers started
 * here: limits are exact across replicas, the ledger equals the answers clients got even when a replica
 * is killed with -9 (its holds free themselves), an outage of either backend gives only 503s and full
 * service after, keys made with the CLI work everywhere at once, and chat memory follows the caller.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startServe, type Served } from '../cli/helpers/cli.ts';
import { postgresAvailable, POSTGRES_MISSING, startPostgres, type PostgresServer } from '../helpers/postgres-server.ts';
import { redisAvailable, REDIS_MISSING, startRedis, type RedisServer } from '../helpers/redis-server.ts';

const ready = redisAvailable && postgresAvailable;
if (!ready) console.warn(`skipping the replica tests: ${[redisAvailable ? '' : REDIS_MISSING, POSTGRES_MISSING].filter(Boolean).join('; ')}`);

const HOLD_TTL_MS = 1500;

describe.skipIf(!ready)('three replicas on Redis and PostgreSQL', () => {
  let redis: RedisServer;
  let pg: PostgresServer;
  let replicas: Served[] = [];
  let backends: string[];

  const key = async (...args: string[]): Promise<string> => {
    const r = await runCli(['keys', 'create', '--store', pg.url, ...args]);
    if (r.code !== 0) throw new Error(`keys create failed: ${r.stderr}`);
    return r.stdout.trimEnd().split('\n').pop()!;
  };

  const replica = async (): Promise<Served> => {
    return startServe(null, backends, 180_000);
  };

  beforeAll(async () => {
    [redis, pg] = await Promise.all([startRedis(), startPostgres()]);
    backends = ['--store', pg.url, '--redis', redis.url];
    process.env.SVC_QUOTA_HOLD_TTL_MS = String(HOLD_TTL_MS);
    // Sequential: three model loads at once would only compete for the same two cores.
    for (let i = 0; i < 3; i++) replicas.push(await replica());
  }, 600_000);

  afterAll(async () => {
    for (const s of replicas) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL');
    await redis?.close();
    await pg?.close();
  });

  const ask = (s: Served, k: string, extra: Record<string, unknown> = {}) =>
    fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'svc-chat', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 2, temperature: 0, ...extra }),
    }).then(async (r) => ({ status: r.status, body: await r.text() }));

  const used = async (s: Served, k: string): Promise<number> => {
    const r = await fetch(`${s.url}/v1/usage`, { headers: { authorization: `Bearer ${k}` } });
    return ((await r.json()) as { requests_used: number }).requests_used;
  };

  it('accepts exactly a Solo key’s 20 requests a minute across the replicas', async () => {
    const solo = await key('--plan', 'solo');
    // Six at a time, two per replica: the Solo plan's 2 requests at once per key hold on each replica,
    // so it is the per-minute limit, shared through Redis, that refuses.
    const results: { status: number; body: string }[] = [];
    for (let wave = 0; wave < 10; wave++) results.push(...(await Promise.all(Array.from({ length: 6 }, (_, i) => ask(replicas[i % 3], solo)))));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(results.filter((r) => r.status !== 200).map((r) => JSON.parse(r.body).error.code)).toEqual(Array(40).fill('rate_limit_exceeded'));
    expect(await used(replicas[1], solo)).toBe(20);
  }, 240_000);

  it('grants a monthly allowance exactly once across the replicas', async () => {
    const k = await key('--plan', 'enterprise', '--rpm', '1000', '--monthly', '13');
    const results = await Promise.all(Array.from({ length: 45 }, (_, i) => ask(replicas[i % 3], k)));
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBe(13);
    expect(results.filter((r) => r.status === 429).every((r) => JSON.parse(r.body).error.code === 'insufficient_quota')).toBe(true);
    for (const s of replicas) expect(await used(s, k)).toBe(13);
  }, 240_000);

  it('keys made with the CLI work on every replica at once, and chat memory follows the caller between replicas', async () => {
    const k = await key('--plan', 'scale');
    const answers = await Promise.all(replicas.map((s) => ask(s, k)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const infer = (s: Served) =>
      fetch(`${s.url}/v1/infer`, {
        method: 'POST',
        headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
        body: JSON.stringify({ specialist: 'chat', prompt: 'Tell me about the cat.', conversation_id: 'across', max_tokens: 3, temperature: 0 }),
      }).then(async (r) => (await r.json()) as { history_turns: number });
    expect((await infer(replicas[0])).history_turns).toBe(0);
    expect((await infer(replicas[1])).history_turns).toBe(2);
    expect((await infer(replicas[2])).history_turns).toBe(4);
  }, 120_000);

  it('after kill -9 of a replica under load, every answer clients got is counted once, rows beyond them only for the dead replica’s undelivered answers, and its holds free themselves', async () => {
    const monthly = 40;
    const k = await key('--plan', 'enterprise', '--rpm', '1000', '--monthly', String(monthly));
    const victim = replicas[2];
    // Long streams on the victim (held until it dies), short requests everywhere.
    try {
      const long = Array.from({ length: 3 }, () => ask(victim, k, { max_tokens: 400, stream: true }).catch(() => ({ status: 0, body: '' })));
      const short = Array.from({ length: 12 }, (_, i) => ask(replicas[i % 3], k).catch(() => ({ status: 0, body: '' })));
      await new Promise((r) => setTimeout(r, 300));
      victim.proc.kill('SIGKILL');
      const results = await Promise.all([...long, ...short]);
      // A stream cut off by the death is not a complete answer (no [DONE]).
      const complete = (r: { status: number; body: string }) => r.status === 200 && (!r.body.startsWith('data:') || r.body.includes('data: [DONE]'));
      const answered = results.filter(complete).length;
      // Every answer a client got is counted, once. The only rows beyond them are requests the victim had
      // finished and counted but whose last bytes died with it: a kill between the usage commit and the
      // response reaching the client cannot be told apart from one after, as HTTP has no acknowledgement.
      // Seen on a loaded CI machine (2 of the victim's 4 short requests); the survivors never do this.
      const onVictim = [...results.slice(0, 3), ...results.slice(3).filter((_, i) => i % 3 === 2)];
      const victimUnanswered = onVictim.filter((r) => !complete(r)).length;
      const counted = await used(replicas[0], k);
      expect(counted).toBeGreaterThanOrEqual(answered);
      expect(counted - answered).toBeLessThanOrEqual(victimUnanswered);
      const survivorsAnswered = results.slice(3).filter((r, i) => i % 3 !== 2 && complete(r)).length;
      expect(survivorsAnswered).toBe(8);

      // Once the dead replica's holds have expired, exactly the rest of the allowance is granted.
      await new Promise((r) => setTimeout(r, HOLD_TTL_MS * 2));
      const rest = await Promise.all(Array.from({ length: monthly }, (_, i) => ask(replicas[i % 2], k)));
      expect(rest.filter((r) => r.status === 200)).toHaveLength(monthly - counted);
      expect(await used(replicas[1], k)).toBe(monthly);
    } finally {
      // The later tests need three replicas, whatever happened here.
      replicas[2] = await replica();
    }
  }, 300_000);

  /**
   * Requests keep flowing to every replica while `outage` stops a backend and starts it again: every
   * answer is a 200 or a 503 with Retry-After (never a 500, never a pass without the limits), there were
   * 503s while it was down, and all replicas answer 200 again afterwards.
   */
  async function underLoad(k: string, outage: () => Promise<void>): Promise<void> {
    const seen: { status: number; retryAfter: string | null }[] = [];
    let running = true;
    const loaders = replicas.map(async (s) => {
      while (running) {
        const r = await fetch(`${s.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'svc-chat', messages: [{ role: 'user', content: 'x' }], max_tokens: 2 }),
        });
        await r.text();
        seen.push({ status: r.status, retryAfter: r.headers.get('retry-after') });
        await new Promise((res) => setTimeout(res, 20));
      }
    });
    await new Promise((r) => setTimeout(r, 300));
    await outage();
    await expect.poll(async () => (await Promise.all(replicas.map((s) => ask(s, k)))).map((r) => r.status), { timeout: 30_000, interval: 500 }).toEqual([200, 200, 200]);
    running = false;
    await Promise.all(loaders);
    expect([...new Set(seen.map((x) => x.status))].sort()).toEqual([200, 503]);
    expect(seen.filter((x) => x.status === 503).every((x) => Number(x.retryAfter) > 0)).toBe(true);
  }

  it('answers only 503 with Retry-After while Redis is down under load, and serves fully once it is back', async () => {
    const k = await key('--plan', 'scale');
    await underLoad(k, async () => {
      await redis.stop();
      await new Promise((r) => setTimeout(r, 1500));
      await redis.start();
    });
  }, 120_000);

  it('answers only 503 with Retry-After while PostgreSQL is down under load, and serves fully once it is back', async () => {
    const k = await key('--plan', 'scale');
    await underLoad(k, async () => {
      await pg.stop();
      await new Promise((r) => setTimeout(r, 1500));
      await pg.start();
    });
  }, 120_000);
});
