import type { Measurement } from './measure.ts';

/** Side-by-side table of measurements, one row per engine. */
export function formatTable(rows: Measurement[]): string {
  const head = ['engine', 'backend', 'prefill tok/s', 'decode tok/s', 'TTFT ms', 'load ms', 'GPU MiB', 'dispatch/tok', 'decode GB/s', '% read', 'prefill GFLOP/s', '% FMA'];
  const body = rows.map((r) => [
    r.engine,
    r.backend,
    r.prefillTokensPerSecond.toFixed(1),
    r.decodeTokensPerSecond.toFixed(1),
    r.timeToFirstTokenMs.toFixed(1),
    r.loadMs.toFixed(0),
    r.gpuMemoryBytes !== undefined ? (r.gpuMemoryBytes / 2 ** 20).toFixed(1) : '-',
    r.dispatchesPerToken !== undefined ? String(r.dispatchesPerToken) : '-',
    r.efficiency ? r.efficiency.decodeWeightGBps.toFixed(3) : '-',
    r.efficiency?.decodeReadPercent !== undefined ? r.efficiency.decodeReadPercent.toFixed(1) : '-',
    r.efficiency ? r.efficiency.prefillGflops.toFixed(3) : '-',
    r.efficiency?.prefillFmaPercent !== undefined ? r.efficiency.prefillFmaPercent.toFixed(1) : '-',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => '| ' + cells.map((c, i) => c.padEnd(widths[i])).join(' | ') + ' |';
  const table = [line(head), '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|', ...body.map(line)].join('\n');
  const extras = rows.filter((r) => r.extra).map((r) => `${r.engine}: ` + Object.entries(r.extra!).map(([k, v]) => `${k} ${v}`).join(', '));
  return [table, ...extras].join('\n');
}
