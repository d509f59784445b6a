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
 * they do: a short burst of compute, and the threads whose CPU time grew with it. Node has no call to
 * set a thread's affinity; util-linux's `taskset` does it by thread id. Pinning is skipped (and says
 * why) where the workers outnumber the CPUs this process may use (pinning would pack them), where there
 * is one CPU, where `/proc` or `taskset` is missing, or when SVC_PIN_WORKERS=off.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { FmaProbe } from '../../kernels/probes/fma.ts';
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

/** Nanoseconds each thread of this process has run (schedstat's first field), by thread id. */
export function threadRuntimes(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out.set(Number(tid), Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/**
 * The threads that did a burst's work: those (other than `mainTid`, which submitted it) whose run time
 * grew by at least half the largest growth, most first. The pool shares a burst's workgroups about
 * evenly; Node's and Dawn's own threads ran 1-3 ms beside the workers' 9.5 during one.
 */
export function busiestThreads(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>, mainTid: number): number[] {
  const grown = [...after].filter(([tid]) => tid !== mainTid).map(([tid, ns]) => ({ tid, ns: ns - (before.get(tid) ?? 0) }));
  const most = Math.max(0, ...grown.map((g) => g.ns));
  if (most <= 0) return [];
  return grown
    .filter((g) => g.ns >= most / 2)
    .sort((a, b) => b.ns - a.ns)
    .map((g) => g.tid);
}

/** Worker i to the i-th allowed CPU, or why not. */
export function planPinning(workers: readonly number[], cpus: readonly number[]): { tid: number; cpu: number }[] | string {
  if (cpus.length < 2) return `this process may use ${cpus.length} CPU, nothing to spread`;
  if (workers.length < 2) return `found ${workers.length} compute worker thread, nothing to spread`;
  if (workers.length > cpus.length) return `llvmpipe runs ${workers.length} compute workers on ${cpus.length} allowed CPUs; pinning would pack them`;
  return workers.map((tid, i) => ({ tid, cpu: cpus[i] }));
}

type Run = (file: string, args: string[]) => void;
const runQuietly: Run = (file, args) => {
  execFileSync(file, args, { stdio: 'ignore', timeout: 5000 });
};

/**
 * Find the device's compute workers with bursts of FMA work (about 10 ms a CPU each on llvmpipe) and pin each
 * to its own allowed CPU. Never throws: a failure leaves the threads where they were and says why.
 */
export async function pinComputeWorkers(device: GPUDevice, caps: GpuCaps, env: NodeJS.ProcessEnv = process.env, run: Run = runQuietly): Promise<WorkerPinning> {
  if ((env.SVC_PIN_WORKERS ?? '').toLowerCase() === 'off') return { pinned: [], reason: 'SVC_PIN_WORKERS=off' };
  if (process.platform !== 'linux') return { pinned: [], reason: `not on Linux (${process.platform})` };
  try {
    const cpus = allowedCpus();
    if (cpus.length < 2) return { pinned: [], reason: `this process may use ${cpus.length} CPU, nothing to spread` };
    // Another process's load can hide a worker from one search; a second search usually finds it.
    let plan = planPinning(await findComputeWorkers(device, caps, cpus.length), cpus);
    if (typeof plan === 'string') plan = planPinning(await findComputeWorkers(device, caps, cpus.length), cpus);
    if (typeof plan === 'string') return { pinned: [], reason: plan };
    for (const p of plan) run('taskset', ['-p', '-c', String(p.cpu), String(p.tid)]);
    return { pinned: plan, reason: `${plan.length} llvmpipe compute workers pinned one to a CPU (${plan.map((p) => p.cpu).join(', ')})` };
  } catch (e) {
    return { pinned: [], reason: `not pinned: ${(e as Error).message.split('\n')[0]}` };
  }
}

/**
 * The threads that ran three bursts of compute, after one that compiles the kernel, by their run time
 * over the three together (busiestThreads): Mesa writes a newly compiled shader to its disk cache on a
 * thread of its own, and on a busy machine one burst may reach a worker late; summed, the pool's
 * workers stand out.
 */
async function findComputeWorkers(device: GPUDevice, caps: GpuCaps, cpus: number): Promise<number[]> {
  await computeBurst(device, caps, cpus, 1);
  const before = threadRuntimes();
  for (let i = 0; i < 3; i++) await computeBurst(device, caps, cpus);
  return busiestThreads(before, threadRuntimes(), process.pid);
}

/** 32 workgroups of FMA chains a CPU, enough for every worker of the pool to take some. */
export async function computeBurst(device: GPUDevice, caps: GpuCaps, cpus: number, iters = 8192): Promise<void> {
  const ctx = new KernelContext(device, caps);
  const probe = new FmaProbe(ctx, 4, 64);
  const workgroups = 32 * cpus;
  const out = ctx.storage('pin-burst-out', probe.invocations(workgroups) * 4);
  const arena = new ParamArena(ctx, 1);
  try {
    const group = probe.bind(out);
    const commands = onePass(device, (pass) => probe.encode(pass, arena, group, { iters, m: 1, c: 1, workgroups }));
    arena.flush();
    await submitMs(device, commands);
  } finally {
    out.destroy();
    arena.buffer.destroy();
  }
}
