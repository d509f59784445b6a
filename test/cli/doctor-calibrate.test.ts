/** `svc doctor --calibrate` as a user runs it: the adapter's measured limits in sentences, or as JSON. */
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.ts';

describe('svc doctor --calibrate', () => {
  it('prints streaming-read GB/s, FMA GFLOP/s and dispatch cost as sentences', async () => {
    const r = await runCli(['doctor', '--calibrate', '--calibrate-mib', '2']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^calibration:$/m);
    expect(r.stdout).toMatch(/Streaming read: \d+\.\d+ GB\/s at best \(/);
    expect(r.stdout).toMatch(/Arithmetic: \d+\.\d+ GFLOP\/s of f32 FMA/);
    expect(r.stdout).toMatch(/Dispatch: \d+\.\d+ µs per dispatch .*; one lone submit with a readback takes \d+ µs/);
    expect(r.stderr).toContain('calibrating: streaming read of 2.0 MiB');
  });

  it('adds the figures to --json output, which stays parseable', async () => {
    const r = await runCli(['doctor', '--json', '--calibrate', '--calibrate-mib', '2']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { calibration: { streamReadGBps: number; fmaGflops: number; dispatchUs: number; roundTripUs: number; streamReadBytes: number } };
    for (const k of ['streamReadGBps', 'fmaGflops', 'dispatchUs', 'roundTripUs'] as const) expect(report.calibration[k]).toBeGreaterThan(0);
    expect(report.calibration.streamReadBytes).toBe(2 * 2 ** 20);
    const bad = await runCli(['doctor', '--calibrate', '--calibrate-mib', 'lots']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--calibrate-mib must be an integer/);
  });
});
