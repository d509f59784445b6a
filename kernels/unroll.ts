/**
 * Unrolling for kernels written for CPU rasterisers, which neither unroll loops nor keep dynamically
 * indexed arrays in registers: a template's lines are repeated with their index variables written out.
 */

/**
 * Every line containing `$r` is written once per r in 0 .. rows-1, every line containing `$t` once per t
 * in 0 .. tokens-1 (a line with both, once per pair), with the variable replaced by its value; `$ROWS`
 * and `$TOKENS` become the counts. A line containing `$v` is written once per quad of rows (rows / 4 times,
 * rows a multiple of 4), with `$v0` .. `$v3` replaced by the quad's four row indices.
 */
export function unrollRowsTokens(template: string, rows: number, tokens: number): string {
  const lines = template.replaceAll('$ROWS', String(rows)).replaceAll('$TOKENS', String(tokens)).split('\n');
  if (lines.some((l) => l.includes('$v')) && rows % 4 !== 0) throw new Error(`unroll: quads of rows need a multiple of 4 rows, not ${rows}`);
  const quads = lines.flatMap((line) =>
    line.includes('$v') ? Array.from({ length: rows / 4 }, (_, q) => line.replace(/\$v([0-3])/g, (_m, j: string) => String(4 * q + Number(j)))) : [line],
  );
  return expand(expand(quads, '$r', rows), '$t', tokens).join('\n');
}

/** Every line containing `variable` written once per i in 0 .. n-1 with it replaced by i (n = 0 drops the line). */
export function unrollLines(template: string, variable: string, n: number): string {
  return expand(template.split('\n'), variable, n).join('\n');
}

function expand(lines: string[], v: string, n: number): string[] {
  return lines.flatMap((line) => (line.includes(v) ? Array.from({ length: n }, (_, i) => line.replaceAll(v, String(i))) : [line]));
}
