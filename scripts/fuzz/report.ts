/** Tallies outcomes and renders the summary: statuses and error codes, failures, /health, memory, mix. */
import type { Category, Outcome } from './cases.ts';
import type { HealthSummary } from './health.ts';

export const HEALTH_LIMIT_MS = 250;

export interface Failure {
  name: string;
  status: Outcome['status'];
  code: string | null;
  why: string;
  /** A file holding the exact request bytes, when there was one. */
  requestFile?: string;
  /** The request's first bytes, for the report. */
  excerpt?: string;
}

export class Tally {
  exchanges = 0;
  cases = 0;
  readonly byStatus = new Map<string, number>();
  readonly byStatusCode = new Map<string, number>();
  readonly byCategory = new Map<Category, { cases: number; exchanges: number; maxMs: number }>();
  readonly unexpected = new Map<string, Map<string, number>>();
  /** Sum of answer times per generator: where the run's time went. */
  readonly busyMs = new Map<string, number>();
  readonly failures: Failure[] = [];
  validOk = 0;
  validTotal = 0;
  overloaded = 0;

  addCase(category: Category): void {
    this.cases++;
    const c = this.byCategory.get(category) ?? { cases: 0, exchanges: 0, maxMs: 0 };
    c.cases++;
    this.byCategory.set(category, c);
  }

  /** Records one exchange; returns why it is a failure (5xx, a hang, a broken stream), or undefined. */
  add(category: Category, name: string, o: Outcome, expect: (number | string)[]): string | undefined {
    this.exchanges++;
    const c = this.byCategory.get(category)!;
    c.exchanges++;
    c.maxMs = Math.max(c.maxMs, o.ms);
    this.busyMs.set(name, (this.busyMs.get(name) ?? 0) + o.ms);
    const s = String(o.status);
    inc(this.byStatus, s);
    if (typeof o.status === 'number' && o.status >= 400) inc(this.byStatusCode, `${o.status} ${o.code ?? '(no JSON error)'}`);
    if (category === 'valid' && !name.endsWith('models-usage-health')) {
      this.validTotal++;
      if (o.status === 200 && !o.problem) this.validOk++;
    }
    if (!expect.includes(o.status)) {
      const m = this.unexpected.get(name) ?? new Map<string, number>();
      inc(m, o.code ? `${s} ${o.code}` : s);
      this.unexpected.set(name, m);
    }
    if (o.status === 503 && o.code === 'overloaded') {
      this.overloaded++;
      return undefined;
    }
    if (typeof o.status === 'number' && o.status >= 500) return `${o.status} ${o.code ?? ''}`.trim();
    if (o.status === 'timeout' && !expect.includes('timeout')) return 'no answer in time (hang?)';
    if (o.problem) return o.problem;
    return undefined;
  }

  /** 5xx other than 503 overloaded (load shedding, reported apart). */
  get serverErrors(): number {
    let n = 0;
    for (const [s, v] of this.byStatus) if (/^5\d\d$/.test(s)) n += v;
    return n - this.overloaded;
  }
}

function inc(m: Map<string, number>, k: string): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

export interface RunSummary {
  date: string;
  machine: { cpu: string; cores: number; node: string; os: string };
  server: { url: string; spawned: boolean; args: string[] };
  options: { requests: number; concurrency: number; seed: number };
  wallSeconds: number;
  requestsPerSecond: number;
  exchanges: number;
  cases: number;
  byStatus: Record<string, number>;
  byStatusAndCode: Record<string, number>;
  serverErrors: number;
  overloaded503: number;
  validGenerations: { ok: number; total: number };
  health: HealthSummary;
  rssMiB: { before: number | null; after: number | null };
  mix: Record<string, { cases: number; exchanges: number; maxMs: number }>;
  unexpected: Record<string, Record<string, number>>;
  busiestGenerators: Record<string, number>;
  failures: Failure[];
  serverErrorLogs: number;
  finalCheck: Record<string, number | string>;
  serverAlive: boolean;
  verdict: { pass: boolean; reasons: string[] };
}

const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

export function render(r: RunSummary): string {
  const out: string[] = [];
  out.push(`svc fuzz: ${r.exchanges} requests (${r.cases} cases) in ${r.wallSeconds.toFixed(1)} s, ${r.requestsPerSecond.toFixed(1)} req/s, concurrency ${r.options.concurrency}, seed ${r.options.seed}`);
  out.push(`machine: ${r.machine.cpu}, ${r.machine.cores} cores, node ${r.machine.node}; server ${r.server.spawned ? 'spawned' : r.server.url} ${r.server.args.join(' ')}`);
  out.push('');
  out.push('| status | count |');
  out.push('|---|---:|');
  for (const [s, n] of sorted(r.byStatus)) out.push(`| ${s} | ${n} |`);
  out.push('');
  out.push('| status and error code | count |');
  out.push('|---|---:|');
  for (const [s, n] of sorted(r.byStatusAndCode)) out.push(`| ${s} | ${n} |`);
  out.push('');
  out.push('| check | value |');
  out.push('|---|---|');
  out.push(`| 5xx (must be 0) | ${r.serverErrors} |`);
  out.push(`| 503 overloaded (load shedding, not a failure) | ${r.overloaded503} |`);
  out.push(`| valid generations answered 200 | ${r.validGenerations.ok} / ${r.validGenerations.total} |`);
  out.push(`| /health max (must be < ${HEALTH_LIMIT_MS} ms) | ${fmt(r.health.maxMs)} |`);
  out.push(`| /health p99 / p50 | ${fmt(r.health.p99Ms)} / ${fmt(r.health.p50Ms)} (${r.health.samples} probes, ${r.health.non200.length} not 200) |`);
  out.push(`| server RSS before / after | ${r.rssMiB.before ?? '?'} MiB / ${r.rssMiB.after ?? '?'} MiB |`);
  out.push(`| server error log lines | ${r.serverErrorLogs} |`);
  out.push(`| every specialist 200 afterwards | ${Object.entries(r.finalCheck).map(([k, v]) => `${k} ${v}`).join(', ')} |`);
  out.push(`| server process alive at the end | ${r.serverAlive ? 'yes' : 'NO'} |`);
  out.push('');
  out.push('| category | cases | requests | slowest answer |');
  out.push('|---|---:|---:|---:|');
  for (const [c, v] of Object.entries(r.mix)) out.push(`| ${c} | ${v.cases} | ${v.exchanges} | ${fmt(v.maxMs)} |`);
  out.push('');
  out.push(`Time spent waiting for answers, by generator (top 8): ${Object.entries(r.busiestGenerators).slice(0, 8).map(([k, v]) => `${k} ${(v / 1000).toFixed(0)} s`).join(', ')}`);
  if (Object.keys(r.unexpected).length) {
    out.push('');
    out.push('Answers other than the generator expected (not failures unless 5xx or a hang):');
    for (const [name, m] of Object.entries(r.unexpected)) out.push(`  ${name}: ${Object.entries(m).map(([k, v]) => `${k} ×${v}`).join(', ')}`);
  }
  if (r.failures.length) {
    out.push('');
    out.push(`Failures (${r.failures.length}):`);
    for (const f of r.failures.slice(0, 30)) out.push(`  ${f.name}: ${f.why}${f.requestFile ? ` — request in ${f.requestFile}` : ''}${f.excerpt ? `\n    ${f.excerpt}` : ''}`);
  }
  out.push('');
  out.push(r.verdict.pass ? 'PASS' : `FAIL: ${r.verdict.reasons.join('; ')}`);
  return out.join('\n');
}

function sorted(m: Record<string, number>): [string, number][] {
  return Object.entries(m).sort(([a], [b]) => a.localeCompare(b));
}

export function mapToObject<V>(m: Map<string, V>): Record<string, V> {
  return Object.fromEntries([...m].sort(([a], [b]) => a.localeCompare(b)));
}
