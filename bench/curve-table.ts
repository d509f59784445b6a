import type { EngineCurve } from './curve.ts';

/**
 * The batching curve as a table: one row per engine and sequence count. "decode x1" is the aggregate
 * decode rate over the same engine's rate with one sequence (how much batching buys).
 */
export function formatCurveTable(curves: readonly EngineCurve[]): string {
  const head = ['engine', 'backend', 'seqs', 'prefill tok/s', 'all-first ms', 'decode tok/s', 'decode/seq tok/s', 'decode x1', 'window tok'];
  const body = curves.flatMap((c) => {
    const one = c.points.find((p) => p.sequences === 1)?.decodeTokensPerSecond;
    return c.points.map((p) => [
      c.engine,
      c.backend,
      String(p.sequences),
      p.prefillTokensPerSecond.toFixed(1),
      p.allFirstTokenMs.toFixed(0),
      p.decodeTokensPerSecond.toFixed(1),
      p.perSequenceDecodeTokensPerSecond.toFixed(1),
      one ? (p.decodeTokensPerSecond / one).toFixed(2) : '-',
      String(p.decodeTokensPerSequence),
    ]);
  });
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => '| ' + cells.map((c, i) => c.padEnd(widths[i])).join(' | ') + ' |';
  return [line(head), '|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|', ...body.map(line)].join('\n');
}
