/**
 * What an operator scrapes (prom-client, Prometheus text format): requests by endpoint, specialist,
 * status and transport; latency, time to first token and tokens per second; the queue, running
 * sequences, KV pages and prefix-cache counters read from the service at scrape time; refusals by the
 * rate limits; the adapter, model and version. Transports report each finished request with observe().
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { FinishedRequest } from '../kit/observer.ts';
import type { EngineStats } from '../../engine/engine.ts';
import type { Service } from '../../protocol/service.ts';

/** The refusals counted apart, by the error code they answer with. */
const REFUSAL_CODES = new Set(['rate_limit_exceeded', 'insufficient_quota', 'concurrency_limit_exceeded', 'overloaded', 'backend_unavailable']);

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'endpoint' | 'specialist' | 'status' | 'transport'>;
  private readonly latency: Histogram<'endpoint' | 'transport'>;
  private readonly ttft: Histogram<'specialist'>;
  private readonly tokensPerSecond: Histogram<'specialist'>;
  private readonly refusals: Counter<'code'>;

  constructor(opts: { service: Service; engine: () => { stats(): EngineStats } | undefined; info: () => { adapter: string; model: string; version: string } | undefined }) {
    const r = this.registry;
    collectDefaultMetrics({ register: r, prefix: 'svc_process_' });
    this.requests = new Counter({ name: 'svc_requests_total', help: 'Requests answered, by endpoint, specialist, status and transport', labelNames: ['endpoint', 'specialist', 'status', 'transport'], registers: [r] });
    this.latency = new Histogram({
      name: 'svc_request_duration_seconds',
      help: 'Time from arrival to the end of the answer (the whole stream for streams)',
      labelNames: ['endpoint', 'transport'],
      buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [r],
    });
    this.ttft = new Histogram({ name: 'svc_time_to_first_token_seconds', help: 'Time from arrival to the first generated token', labelNames: ['specialist'], buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30], registers: [r] });
    this.tokensPerSecond = new Histogram({ name: 'svc_tokens_per_second', help: 'Generated tokens per second of one request, after its first token', labelNames: ['specialist'], buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], registers: [r] });
    this.refusals = new Counter({ name: 'svc_refusals_total', help: 'Requests refused by a limit (rate, quota, concurrency, overload, an unreachable backend), by error code', labelNames: ['code'], registers: [r] });

    const engineStats = () => opts.engine()?.stats();
    new Gauge({ name: 'svc_queue_depth', help: 'Requests waiting for a generation place', registers: [r], collect() { this.set(opts.service.admission.queuedCount); } });
    new Gauge({ name: 'svc_running_generations', help: 'Generations admitted and running', registers: [r], collect() { this.set(opts.service.admission.runningCount); } });
    new Gauge({ name: 'svc_engine_sequences', help: "The engine's sequences, active and waiting", labelNames: ['state'], registers: [r], collect() {
      const s = engineStats();
      if (!s) return;
      this.set({ state: 'active' }, s.activeSequences);
      this.set({ state: 'waiting' }, s.waitingSequences);
    } });
    new Gauge({ name: 'svc_kv_pages', help: 'KV cache pages, used and free', labelNames: ['state'], registers: [r], collect() {
      const s = engineStats();
      if (!s) return;
      this.set({ state: 'free' }, s.kvPages.free);
      this.set({ state: 'used' }, s.kvPages.total - s.kvPages.free);
    } });
    new Gauge({ name: 'svc_prefix_cache', help: 'Prefix cache counters since start (lookups, hits, hit tokens and those copied from a partly matching page, blocks listed now)', labelNames: ['counter'], registers: [r], collect() {
      const p = engineStats()?.prefixCache;
      if (!p) return;
      for (const k of ['lookups', 'hits', 'hitTokens', 'copiedTokens', 'blocks', 'inserted', 'evicted'] as const) this.set({ counter: k }, p[k]);
    } });
    new Gauge({ name: 'svc_info', help: 'The adapter, model and version this replica runs (value 1)', labelNames: ['adapter', 'model', 'version'], registers: [r], collect() {
      const i = opts.info();
      this.reset();
      if (i) this.set(i, 1);
    } });
  }

  observe(f: FinishedRequest): void {
    const specialist = f.record.specialist ?? '';
    this.requests.inc({ endpoint: f.endpoint, specialist, status: String(f.status), transport: f.transport });
    this.latency.observe({ endpoint: f.endpoint, transport: f.transport }, (performance.now() - f.startedAt) / 1000);
    if (f.record.firstTokenAt !== undefined) {
      this.ttft.observe({ specialist }, (f.record.firstTokenAt - f.startedAt) / 1000);
      const tokens = f.record.completionTokens ?? 0;
      const span = ((f.record.lastTokenAt ?? f.record.firstTokenAt) - f.record.firstTokenAt) / 1000;
      if (tokens > 1 && span > 0) this.tokensPerSecond.observe({ specialist }, (tokens - 1) / span);
    }
    if (f.record.errorCode && REFUSAL_CODES.has(f.record.errorCode)) this.refusals.inc({ code: f.record.errorCode });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
