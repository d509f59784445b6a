/**
 * `npm run fuzz`: at least --requests (10,000) generated hostile requests against a running server, with
 * /health probed every 50 ms throughout. Starts its own `svc serve` unless --url is given.
 *
 *   npm run fuzz -- [--requests N] [--concurrency N] [--seed N] [--url URL --key KEY [--pid PID]] [--out FILE]
 *
 * Exit code 1 when any 5xx other than 503 overloaded came back, a request hung, /health took 250 ms or
 * more, a specialist failed afterwards, or the server process died.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, platform, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { INFER, inferBody, post, Rng, type Case, type Keys, type Outcome } from './cases.ts';
import { nextCase } from './generators.ts';
import { EXTRAS_FOR_CHECK, SPECIALISTS } from './generators/valid.ts';
import { HealthMonitor, summarizeHealth } from './health.ts';
import { encodeRequest, errorCode, exchange, targetOf } from './raw-http.ts';
import { HEALTH_LIMIT_MS, mapToObject, render, Tally, type RunSummary } from './report.ts';
import { makeKeys, ROOT, rssMiB, startServer, stopServer, type Served } from './server.ts';

const USAGE = 'usage: npm run fuzz -- [--requests N] [--concurrency N] [--seed N] [--model PATH] [--url URL --key KEY [--pid PID]] [--out FILE]';

function options() {
  try {
    return parseArgs({
      options: {
        requests: { type: 'string', default: '10000' },
        concurrency: { type: 'string', default: '12' },
        seed: { type: 'string', default: '1' },
        url: { type: 'string' },
        key: { type: 'string' },
        pid: { type: 'string' },
        model: { type: 'string', default: '../shared/models/stories260K.gguf' },
        out: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    }).values;
  } catch (e) {
    process.stderr.write(`fuzz: ${(e as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
}

function wholeNumber(name: string, v: string, min: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(`fuzz: --${name} must be a whole number of at least ${min} (got ${JSON.stringify(v)})\n${USAGE}\n`);
    process.exit(2);
  }
  return n;
}

const opt = options();
if (opt.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const REQUESTS = wholeNumber('requests', opt.requests, 1);
const CONCURRENCY = wholeNumber('concurrency', opt.concurrency, 1);
const SEED = wholeNumber('seed', opt.seed, 0);
/** Slow-by-design cases (slowloris, idle sockets) running beside the main pool at most. */
const BACKGROUND_LIMIT = 16;
const SERVE_ARGS = ['--max-running', '8', '--max-queue', '64'];

function log(msg: string): void {
  process.stderr.write(`[fuzz] ${msg}\n`);
}

async function main(): Promise<number> {
  let served: Served | undefined;
  let keys: Keys;
  let url: string;
  let dataDir: string | undefined;
  if (opt.url) {
    if (!opt.key) throw new Error('--url needs --key (an account with high limits and every plan feature)');
    url = opt.url.replace(/\/$/, '');
    keys = { main: opt.key, professional: opt.key, starter: opt.key, solo: opt.key, sandbox: opt.key, revoked: 'svc_live_' + 'R'.repeat(32) };
  } else {
    dataDir = mkdtempSync(join(tmpdir(), 'svc-fuzz-data-'));
    log(`keys in ${dataDir}`);
    keys = await makeKeys(dataDir);
    log('starting svc serve');
    served = await startServer(dataDir, opt.model!, SERVE_ARGS);
    url = served.url;
    log(`listening on ${url} (pid ${served.proc.pid})`);
  }
  const pid = served?.proc.pid ?? (opt.pid ? Number(opt.pid) : undefined);
  const t = targetOf(url);

  // Warm-up: one real generation, so RSS "before" includes a loaded, used engine.
  const warm = await exchange(t, { ...post(INFER, inferBody('chat', { max_tokens: 4 }), keys.main), timeoutMs: 120_000 });
  if (warm.status !== 200) throw new Error(`warm-up request answered ${warm.status}: ${warm.body.toString().slice(0, 500)}`);
  const rssBefore = rssMiB(pid);
  log(`warm; server RSS ${rssBefore ?? '?'} MiB; sending ${REQUESTS} requests at concurrency ${CONCURRENCY}`);

  const failDir = join(tmpdir(), `svc-fuzz-failures-${Date.now()}`);
  const tally = new Tally();
  const rng = new Rng(SEED);
  const health = new HealthMonitor(url);
  const started = performance.now();
  let dispatched = 0;
  let failures = 0;
  let nextProgress = 1000;
  const background = new Set<Promise<void>>();

  const record = (c: Case, outcomes: Outcome[]) => {
    for (const o of outcomes) {
      const why = tally.add(c.category, c.name, o, c.expect);
      if (why) saveFailure(c, o, why);
    }
    if (tally.exchanges >= nextProgress) {
      log(`${tally.exchanges} answered, ${tally.serverErrors} 5xx, ${((performance.now() - started) / 1000).toFixed(0)} s`);
      nextProgress += 1000;
    }
  };
  const saveFailure = (c: Case, o: Outcome, why: string) => {
    const f = { name: c.name, status: o.status, code: o.code, why } as RunSummary['failures'][number];
    if (c.request) {
      const bytes = encodeRequest(t, c.request);
      if (failures++ < 200) {
        mkdirSync(failDir, { recursive: true });
        f.requestFile = join(failDir, `${failures}-${c.name.replace(/\W+/g, '_')}.http`);
        writeFileSync(f.requestFile, bytes);
      }
      f.excerpt = JSON.stringify(bytes.subarray(0, 400).toString('latin1')) + (bytes.length > 400 ? ` … (${bytes.length} bytes)` : '');
    }
    tally.failures.push(f);
    log(`FAILURE ${c.name}: ${why}`);
  };
  const runCase = async (c: Case): Promise<void> => {
    try {
      if (c.request) {
        const r = await exchange(t, { timeoutMs: 90_000, ...c.request });
        record(c, [{ status: r.status, code: errorCode(r.body), ms: r.ms }]);
      } else {
        record(c, await c.run!(t));
      }
    } catch (e) {
      record(c, [{ status: 'client-error', code: null, ms: 0, problem: `fuzzer error: ${(e as Error).message}` }]);
    }
  };

  const worker = async () => {
    while (dispatched < REQUESTS && !served?.exit) {
      const c = nextCase({ rng, keys });
      dispatched += c.exchanges;
      tally.addCase(c.category);
      if (c.background) {
        while (background.size >= BACKGROUND_LIMIT) await Promise.race(background);
        const p: Promise<void> = runCase(c).finally(() => background.delete(p));
        background.add(p);
      } else {
        await runCase(c);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  await Promise.all(background);
  const wallSeconds = (performance.now() - started) / 1000;
  log(`done in ${wallSeconds.toFixed(1)} s; settling 2 s before reading RSS`);
  await new Promise((r) => setTimeout(r, 2000));
  const rssAfter = rssMiB(pid);
  const healthSummary = summarizeHealth(await health.stop());

  // Every specialist still answers a normal request.
  const finalCheck: Record<string, number | string> = {};
  for (const s of SPECIALISTS) {
    const r = await exchange(t, { ...post(INFER, inferBody(s, { max_tokens: 8, ...EXTRAS_FOR_CHECK[s] }), keys.main), timeoutMs: 60_000 });
    finalCheck[s] = r.status;
  }
  const alive = served ? !served.exit && isAlive(pid) : pid === undefined || isAlive(pid);

  const reasons: string[] = [];
  if (tally.serverErrors > 0) reasons.push(`${tally.serverErrors} responses were 5xx`);
  const hangs = tally.failures.filter((f) => f.status === 'timeout').length;
  if (hangs > 0) reasons.push(`${hangs} requests got no answer in time`);
  const other = tally.failures.length - hangs - tally.serverErrors;
  if (other > 0) reasons.push(`${other} other failures (broken streams, fuzzer errors)`);
  if (healthSummary.maxMs >= HEALTH_LIMIT_MS) reasons.push(`/health took ${healthSummary.maxMs.toFixed(0)} ms (limit ${HEALTH_LIMIT_MS} ms)`);
  if (healthSummary.non200.length > 0) reasons.push(`${healthSummary.non200.length} /health probes were not 200`);
  const badSpecialists = Object.entries(finalCheck).filter(([, v]) => v !== 200);
  if (badSpecialists.length) reasons.push(`afterwards ${badSpecialists.map(([k, v]) => `${k} answered ${v}`).join(', ')}`);
  if (!alive) reasons.push(`the server process died${served?.exit ? ` (${served.exit.code ?? served.exit.signal})` : ''}`);

  const summary: RunSummary = {
    date: new Date().toISOString(),
    machine: { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, node: process.version, os: `${platform()} ${release()}` },
    server: { url, spawned: !!served, args: served ? ['--model', opt.model!, ...SERVE_ARGS, 'SVC_GRAMMAR_COMPILE_MS=' + (process.env.SVC_GRAMMAR_COMPILE_MS ?? '1000')] : [] },
    options: { requests: REQUESTS, concurrency: CONCURRENCY, seed: SEED },
    wallSeconds,
    requestsPerSecond: tally.exchanges / wallSeconds,
    exchanges: tally.exchanges,
    cases: tally.cases,
    byStatus: mapToObject(tally.byStatus),
    byStatusAndCode: mapToObject(tally.byStatusCode),
    serverErrors: tally.serverErrors,
    overloaded503: tally.overloaded,
    validGenerations: { ok: tally.validOk, total: tally.validTotal },
    health: healthSummary,
    rssMiB: { before: rssBefore, after: rssAfter },
    mix: Object.fromEntries(tally.byCategory),
    busiestGenerators: Object.fromEntries([...tally.busyMs].sort(([, a], [, b]) => b - a).map(([k, v]) => [k, Math.round(v)])),
    unexpected: Object.fromEntries([...tally.unexpected].map(([k, m]) => [k, mapToObject(m)])),
    failures: tally.failures,
    serverErrorLogs: served?.errors.length ?? 0,
    finalCheck,
    serverAlive: alive,
    verdict: { pass: reasons.length === 0, reasons },
  };

  if (served) {
    if (served.errors.length) log(`server error log lines:\n${served.errors.slice(0, 10).map((e) => JSON.stringify(e).slice(0, 1000)).join('\n')}`);
    if (served.exit) log(`server stderr tail:\n${served.tail().slice(-4000)}`);
    const exit = await stopServer(served);
    log(`server stopped (${exit.code ?? exit.signal})`);
    rmSync(dataDir!, { recursive: true, force: true });
  }

  const out = opt.out ?? join(ROOT, 'bench', 'results', `fuzz-${summary.date.slice(0, 10)}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, JSON.stringify(summary, null, 2) + '\n');
  console.log(render(summary));
  log(`JSON written to ${out}`);
  return summary.verdict.pass ? 0 : 1;
}

function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
