import type { AdapterLimitsReport } from './limits.ts';

/** One row per adapter with its best figures, then every variant the best was chosen from. */
export function formatLimitsTable(reports: readonly AdapterLimitsReport[]): string {
  const head = ['adapter', 'read GB/s', 'best read layout', 'FMA GFLOP/s', 'dispatch µs', 'round trip µs'];
  const body = reports.map((r) => [
    r.adapter,
    r.streamReadGBps.toFixed(2),
    `${r.streamReadBest.layout}, wg ${r.streamReadBest.workgroupSize}`,
    r.fmaGflops.toFixed(1),
    r.dispatchUs.toFixed(1),
    r.roundTripUs.toFixed(0),
  ]);
  const table = markdownTable(head, body);
  const details = reports.flatMap((r) => {
    const layouts = [...new Set(r.streamReadVariants.map((v) => v.layout))];
    const reads = layouts.map((l) => `${l} ` + r.streamReadVariants.filter((v) => v.layout === l).map((v) => `${v.workgroupSize}:${v.GBps.toFixed(2)}`).join(' '));
    const fmas = [...new Set(r.fmaVariants.map((v) => v.accumulators))].map(
      (a) => `${a} acc ` + r.fmaVariants.filter((v) => v.accumulators === a).map((v) => `${v.workgroupSize}:${v.gflops.toFixed(1)}`).join(' '),
    );
    return [`${r.adapter} read GB/s by layout and workgroup size: ${reads.join('; ')}`, `${r.adapter} FMA GFLOP/s by accumulators and workgroup size: ${fmas.join('; ')}`];
  });
  const kernelHead = ['adapter', 'kernel', 'weights', 'dispatches', 'ms', 'GB/s', '% read'];
  const kernelBody = reports.flatMap((r) =>
    (r.kernels ?? []).map((k) => [r.adapter, `matvec ${k.variant} ${k.type}${k.x === 'int8' ? ', int8 x' : ''}`, `${k.shape}, ${(k.weightBytes / 2 ** 20).toFixed(0)} MiB`, String(k.dispatches), k.ms.toFixed(2), k.GBps.toFixed(2), k.percentOfRead.toFixed(0)]),
  );
  const kernels = kernelBody.length > 0 ? ['', 'Decode matrix-vector kernels (t = 1) against the streaming-read limit:', ...markdownTable(kernelHead, kernelBody)] : [];
  const persistent = reports.flatMap((r) => {
    const p = r.persistent;
    if (!p) return [];
    const trust = p.failedBarriers > 0 ? ` (${p.failedBarriers} barriers gave up waiting: not a trustworthy figure)` : '';
    return [
      '',
      `${r.adapter}: a decode step's ${p.products} ${p.type} products (${(p.weightBytes / 2 ** 20).toFixed(0)} MiB) one dispatch each ${p.dispatchMs.toFixed(2)} ms; in one dispatch of ${p.workgroups} persistent workgroups, a grid barrier between products, ${p.persistentMs.toFixed(2)} ms (${(p.dispatchMs / p.persistentMs).toFixed(2)}x; outputs ${p.sameBits ? 'the same bits' : 'DIFFERENT'})${trust}`,
    ];
  });
  return [...table, ...details, ...kernels, ...persistent].join('\n');
}

function markdownTable(head: string[], body: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => '| ' + cells.map((c, i) => c.padEnd(widths[i])).join(' | ') + ' |';
  return [line(head), '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|', ...body.map(line)];
}
