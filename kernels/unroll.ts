/**
 * Unrolling for kernels written for CPU rasterisers, which neither unroll loops nor keep dynamically
 * indexed arrays in registers: a template's lines are repeated with their index variables written out.
 */

/**
 * Every line containing `$r` is written once per r in 0 .. rows-1, every line containing `$t` once per t
 * in 0 .. tokens-1 (a line with both, once per pair), with the variable replaced by its value; `$ROWS`
 * and `$TOKENS` become the counts.
 */
export function unrollRowsTokens(template: string, rows: number, tokens: number): string {
  const lines = template.replaceAll('$ROWS', String(rows)).replaceAll('$TOKENS', String(tokens)).split('\n');
  return expand(expand(lines, '$r', rows), '$t', tokens).join('\n');
}

/** Every line containing `variable` written once per i in 0 .. n-1 with it replaced by i (n = 0 drops the line). */
export function unrollLines(template: string, variable: string, n: number): string {
  return expand(template.split('\n'), variable, n).join('\n');
}

function expand(lines: string[], v: string, n: number): string[] {
  return lines.flatMap((line) => (line.includes(v) ? Array.from({ length: n }, (_, i) => line.replaceAll(v, String(i))) : [line]));
}
