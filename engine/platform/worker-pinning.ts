/**
 * llvmpipe's compute workers, one to a CPU (Linux).
 *
 * llvmpipe runs each dispatch on a pool of worker threads (one per CPU) that sleep between dispatches and
 * are woken together by the submitting thread. On the 2-core development VM the kernel's scheduler often
 * woke both workers onto the same CPU, and a dispatch lasts far less than the load balancer takes to
 * move one of them, so for stretches of a second or more one CPU sat idle: a 64-token prefill took
 * 270 ms or 400-470 ms by phase, and decode ran 23 or 32 tok/s. With each worker allowed only its own
 * CPU (one process toggling the pinning, interleaved, 20 runs each): prefill median 403 -> 280 ms,
 * decode 23.4 -> 32.2 tok/s; the same recorded prefill step replayed: slow runs 21 -> 4 of 32.
 *
 * Mesa neither names these threads nor offers a setting for their placement, so they are found by what
 * they do: every dispatch wakes each of them (wokenThreads). Node has no call to
 * set a thread's affinity; util-linux's `taskset` does it by thread id. Pinning is skipped (and says
 * why) unless there is one worker for each CPU this process may use (planPinning), where `/proc` or
 * `taskset` is missing, or when SVC_PIN_WORKERS=off.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cpus as onlineCpus } from 'node:os';
import { EmptyProbe } from '../../kernels/probes/empty.ts';
import { onePass, submitMs } from '../../kernels/probes/timing.ts';
import { ParamArena } from '../../kernels/runtime/arena.ts';
import { KernelContext } from '../../kernels/runtime/context.ts';
import type { GpuCaps } from '../../kernels/runtime/caps.ts';
import type { SelectedDevice } from '../gpu/select.ts';

/** Each compute worker's thread id and the one CPU it may now run on (empty when not pinned), and what was done or why nothing was. */
export type WorkerPinning = NonNullable<SelectedDevice['workerPinning']>;

/** CPU numbers of a kernel CPU list such as "0-3,8,10-11". */
export function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(',')) {
    if (part === '') continue;
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`not a CPU list: "${list}"`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    for (let c = lo; c <= hi; c++) cpus.push(c);
  }
  return cpus;
}

/** The CPUs this process may run on (its affinity mask and cpuset), from /proc/self/status. */
export function allowedCpus(status = readFileSync('/proc/self/status', 'utf8')): number[] {
  const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(status);
  if (!m) throw new Error('/proc/self/status has no Cpus_allowed_list');
  return parseCpuList(m[1]);
}

/** Voluntary context switches of each thread of this process (a sleep and a wake each), by thread id. */
export function threadWakeups(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const m = /^voluntary_ctxt_switches:\s*(\d+)/m.exec(readFileSync(`/proc/self/task/${tid}/status`, 'utf8'));
      if (m) out.set(Number(tid), Number(m[1]));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/**
 * The threads woken by the dispatches of a burst: those (other than `mainTid`, which submitted them and
 * waits for each) that slept and woke at least once for every 2 dispatches, in id order. llvmpipe wakes
 * every worker of its pool for each dispatch: on the development VM 50-64 dispatches woke each worker
 * 48-128 times (with LP_NUM_THREADS 1, 2 and 4), V8's own threads 0-12 times. Their CPU time is a poorer sign:
 * Mesa's disk-cache thread and Node's own ran 1-3 ms beside a worker's 9.5 in a 20 ms burst of compute,
 * and an oversubscribed pool shares the CPUs unevenly.
 */
export function wokenThreads(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>, mainTid: number, dispatches: number): number[] {
  return [...after]
    .filter(([tid, n]) => tid !== mainTid && n - (before.get(tid) ?? n) >= dispatches / 2)
    .map(([tid]) => tid)
    .sort((a, b) => a - b);
}

/**
 * The size of llvmpipe's worker pool (Mesa 22.3's llvmpipe_create_screen): LP_NUM_THREADS where set, else
 * the machine's online CPUs.
 */
export function llvmpipePoolSize(env: NodeJS.ProcessEnv = process.env, online = onlineCpus().length): number {
  const n = Number.parseInt(env.LP_NUM_THREADS ?? '', 10);
  return Number.isFinite(n) && n >= 0 ? n : online;
}

/**
 * Worker i to the i-th allowed CPU, where there is one worker for each (llvmpipe's default) and the
 * threads found are the whole pool (`pool`, llvmpipePoolSize), or why not: more workers than CPUs would be
 * packed, fewer (LP_NUM_THREADS below the CPU count) would all go to the first CPUs, where several such
 * processes on one machine would crowd each other, and a count other than the pool's means the search
 * missed some (a pool larger than the CPUs may not run all its workers between two dispatches).
 */
export function planPinning(workers: readonly number[], cpus: readonly number[], pool = workers.length): { tid: number; cpu: number }[] | string {
  if (cpus.length < 2) return `this process may use ${cpus.length} CPU, nothing to spread`;
  if (workers.length < 2) return `found ${workers.length} compute worker thread, nothing to spread`;
  if (workers.length !== pool) return `found ${workers.length} compute worker threads where llvmpipe's pool has ${pool}; left as they are`;
  if (workers.length > cpus.length) return `llvmpipe runs ${workers.length} compute workers on ${cpus.length} allowed CPUs; pinning would pack them`;
  if (workers.length < cpus.length) return `llvmpipe runs ${workers.length} compute workers for ${cpus.length} allowed CPUs; left to the scheduler, which can spread several processes`;
  return workers.map((tid, i) => ({ tid, cpu: cpus[i] }));
}

const BURST_DISPATCHES = 64;

type Run = (file: string, args: string[]) => void;
const runQuietly: Run = (file, args) => {
  execFileSync(file, args, { stdio: 'ignore', timeout: 5000 });
};

/**
 * Find the device's compute workers (the threads a burst of 64 empty dispatches wakes: a few ms) and pin
 * each to its own allowed CPU. Never throws: a failure leaves the threads where they were and says why.
 */
export async function pinComputeWorkers(device: GPUDevice, caps: GpuCaps, env: NodeJS.ProcessEnv = process.env, run: Run = runQuietly): Promise<WorkerPinning> {
  if ((env.SVC_PIN_WORKERS ?? '').toLowerCase() === 'off') return { pinned: [], reason: 'SVC_PIN_WORKERS=off' };
  if (process.platform !== 'linux') return { pinned: [], reason: `not on Linux (${process.platform})` };
  // What taskset has done, so a failure part way says which workers it left pinned.
  const pinned: { tid: number; cpu: number }[] = [];
  try {
    const cpus = allowedCpus();
    if (cpus.length < 2) return { pinned, reason: `this process may use ${cpus.length} CPU, nothing to spread` };
    const pool = llvmpipePoolSize(env);
    // On a busy machine one burst can leave a worker short of the wake count (CI saw 1 of 2 found while
    // other processes ran); a few bursts see the whole pool.
    let workers = await findComputeWorkers(device, caps);
    for (let tries = 1; tries < 3 && workers.length < pool; tries++) workers = await findComputeWorkers(device, caps);
    const plan = planPinning(workers, cpus, pool);
    if (typeof plan === 'string') return { pinned, reason: plan };
    for (const p of plan) {
      run('taskset', ['-p', '-c', String(p.cpu), String(p.tid)]);
      pinned.push(p);
    }
    return { pinned, reason: `${plan.length} llvmpipe compute workers pinned one to a CPU (${plan.map((p) => p.cpu).join(', ')})` };
  } catch (e) {
    const what = pinned.length > 0 ? `pinned ${pinned.length} worker(s), then stopped` : 'not pinned';
    return { pinned, reason: `${what}: ${(e as Error).message.split('\n')[0]}` };
  }
}

/** The threads a burst of empty dispatches wakes (wokenThreads), after one dispatch that compiles the kernel. */
export async function findComputeWorkers(device: GPUDevice, caps: GpuCaps): Promise<number[]> {
  const ctx = new KernelContext(device, caps);
  const probe = new EmptyProbe(ctx);
  const out = ctx.storage('pin-burst-out', 16);
  const arena = new ParamArena(ctx, BURST_DISPATCHES);
  try {
    const group = probe.bind(out);
    const burst = async (n: number) => {
      const commands = onePass(device, (pass) => {
        arena.reset();
        for (let i = 0; i < n; i++) probe.encode(pass, arena, group, { index: 0, value: i });
      });
      arena.flush();
      await submitMs(device, commands);
    };
    await burst(1);
    const before = threadWakeups();
    await burst(BURST_DISPATCHES);
    return wokenThreads(before, threadWakeups(), process.pid, BURST_DISPATCHES);
  } finally {
    out.destroy();
    arena.buffer.destroy();
  }
}
