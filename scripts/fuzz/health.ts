/**
 * GET /health every 50 ms on a fresh connection, for the whole run, from a worker thread: the fuzzer's own
 * main thread builds megabyte bodies, and its pauses must not be charged to the server.
 */
import { Worker } from 'node:worker_threads';

export interface HealthSample {
  /** ms since the monitor started. */
  at: number;
  ms: number;
  status: number | string;
}

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const samples = [];
const t0 = performance.now();
let stopping = false;
function once() {
  return new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const done = (status) => { if (settled) return; settled = true; clearTimeout(timer); resolve({ at: started - t0, ms: performance.now() - started, status }); };
    const req = http.get(workerData.url + '/health', { agent: false, headers: { connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode));
      res.on('error', () => done('reset'));
    });
    const timer = setTimeout(() => { req.destroy(); done('timeout'); }, 5000);
    req.on('error', (e) => done(e.code || 'error'));
  });
}
(async () => {
  while (!stopping) {
    const s = await once();
    samples.push(s);
    const wait = Math.max(0, 50 - s.ms);
    await new Promise((r) => setTimeout(r, wait));
  }
  parentPort.postMessage(samples);
})();
parentPort.on('message', () => { stopping = true; });
`;

export class HealthMonitor {
  private readonly worker: Worker;
  private readonly result: Promise<HealthSample[]>;

  constructor(url: string) {
    this.worker = new Worker(WORKER, { eval: true, workerData: { url } });
    this.result = new Promise((resolve, reject) => {
      this.worker.once('message', (m: HealthSample[]) => resolve(m));
      this.worker.once('error', reject);
    });
  }

  async stop(): Promise<HealthSample[]> {
    this.worker.postMessage('stop');
    const samples = await this.result;
    await this.worker.terminate();
    return samples;
  }
}

export interface HealthSummary {
  samples: number;
  maxMs: number;
  p99Ms: number;
  p50Ms: number;
  non200: { at: number; status: number | string; ms: number }[];
  /** The slowest few, with when they happened (ms since the run started). */
  slowest: { at: number; ms: number }[];
}

export function summarizeHealth(samples: HealthSample[]): HealthSummary {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const q = (p: number) => (ms.length ? ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] : 0);
  return {
    samples: samples.length,
    maxMs: ms.length ? ms[ms.length - 1] : 0,
    p99Ms: q(0.99),
    p50Ms: q(0.5),
    non200: samples.filter((s) => s.status !== 200).map((s) => ({ at: s.at, status: s.status, ms: s.ms })),
    slowest: [...samples].sort((a, b) => b.ms - a.ms).slice(0, 5).map((s) => ({ at: s.at, ms: s.ms })),
  };
}
