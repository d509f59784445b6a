/**
 * llvmpipe's compute workers each run on their own CPU (engine/platform/worker-pinning.ts): found by the
 * compute they do, pinned with taskset, skipped with a reason where that cannot help or cannot be done.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openNodeDevice } from '../../engine/platform/node.ts';
import { allowedCpus, busiestThreads, computeBurst, parseCpuList, pinComputeWorkers, planPinning, threadRuntimes } from '../../engine/platform/worker-pinning.ts';

const cpusOf = (tid: number) => parseCpuList(/^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(`/proc/self/task/${tid}/status`, 'utf8'))![1]);

describe('worker pinning, the parts', () => {
  it('reads CPU lists and the process mask', () => {
    expect(parseCpuList('0-3,8,10-11')).toEqual([0, 1, 2, 3, 8, 10, 11]);
    expect(parseCpuList('5\n')).toEqual([5]);
    expect(() => parseCpuList('0-a')).toThrow(/not a CPU list/);
    expect(allowedCpus('Name:\tnode\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n')).toEqual([0, 1]);
    expect(() => allowedCpus('Name:\tnode\n')).toThrow(/Cpus_allowed_list/);
    expect(allowedCpus()).toEqual(cpusOf(process.pid));
  });

  it('takes the threads whose run time grew with the burst, never the submitting one', () => {
    const before = new Map([[1, 0], [2, 100], [3, 0], [4, 50]]);
    const after = new Map([[1, 9_000_000], [2, 8_000_100], [3, 7_500_000], [4, 60], [5, 3_000_000]]);
    expect(busiestThreads(before, after, 1)).toEqual([2, 3]);
    expect(busiestThreads(before, before, 1)).toEqual([]);
  });

  it('spreads workers one to a CPU, or says why not', () => {
    expect(planPinning([11, 12], [2, 5, 7])).toEqual([{ tid: 11, cpu: 2 }, { tid: 12, cpu: 5 }]);
    expect(planPinning([11, 12, 13], [0, 1])).toMatch(/3 compute workers on 2 allowed CPUs/);
    expect(planPinning([11], [0, 1])).toMatch(/found 1 compute worker/);
    expect(planPinning([11, 12], [0])).toMatch(/1 CPU/);
  });
});

describe('worker pinning on llvmpipe', () => {
  it('pins the threads that run the dispatches, each to its own allowed CPU', async () => {
    const sel = await openNodeDevice('llvmpipe');
    try {
      const pinning = sel.workerPinning!;
      const cpus = allowedCpus();
      if (cpus.length < 2) {
        expect(pinning.pinned).toEqual([]);
        expect(pinning.reason).toMatch(/1 CPU/);
        return;
      }
      expect(pinning.reason).toMatch(/compute workers pinned one to a CPU/);
      expect(pinning.pinned.length).toBeGreaterThanOrEqual(2);
      expect(new Set(pinning.pinned.map((p) => p.cpu)).size).toBe(pinning.pinned.length);
      for (const p of pinning.pinned) {
        expect(cpus).toContain(p.cpu);
        expect(cpusOf(p.tid)).toEqual([p.cpu]);
      }
      // The next dispatch's work lands on the pinned threads.
      const before = threadRuntimes();
      for (let i = 0; i < 3; i++) await computeBurst(sel.device, sel.caps, cpus.length);
      const busy = busiestThreads(before, threadRuntimes(), process.pid);
      expect(busy.length).toBeGreaterThanOrEqual(2);
      for (const tid of busy) expect(pinning.pinned.map((p) => p.tid)).toContain(tid);
    } finally {
      sel.device.destroy();
    }
  });

  it('leaves the threads alone when told to, and says why when taskset cannot run', async () => {
    const sel = await openNodeDevice('llvmpipe');
    try {
      const off = await pinComputeWorkers(sel.device, sel.caps, { SVC_PIN_WORKERS: 'off' });
      expect(off).toEqual({ pinned: [], reason: 'SVC_PIN_WORKERS=off' });
      if (allowedCpus().length < 2) return;
      const failed = await pinComputeWorkers(sel.device, sel.caps, {}, () => {
        throw new Error('spawnSync taskset ENOENT');
      });
      expect(failed.pinned).toEqual([]);
      expect(failed.reason).toBe('not pinned: spawnSync taskset ENOENT');
    } finally {
      sel.device.destroy();
    }
  });
});
