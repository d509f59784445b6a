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

/**
 * Copies of a block walk's step body (`$i` section) a kernel may write out: blocks written out x rows of
 * x. Measured on llvmpipe (decode products, 4 x 8192 x 2048, x quantized; before steps -> the step written
 * out, or as a loop over its blocks):
 *   - t = 1: Q4_K 7.6 -> 6.0 / 7.5 ms; Q6_K 14.7 -> 7.4 / 9.0; Q8_0 (one block a step) 8.4 written out,
 *     12.2 as a loop of one;
 *   - t = 2: Q4_K 8.2 / 9.8; Q6_K 10.4 / 12.1; t = 4: Q4_K 15.3 -> 13.5 / 15.9; Q6_K 21.6 -> 15.0 / 17.8;
 *   - first compile: t = 4 written out Q4_K 3.1 s, Q6_K 1.7 s; t = 8 7.8 s and 4.3 s (as a loop 0.8 and
 *     1.1 s; before steps 0.7 and 1.1 s). llvmpipe compiles on first use, and batches of 2 to 8
 *     sequences are not warmed up.
 */
export const MAX_STEP_COPIES = 16;

/**
 * A block walk's template with steps of `step` blocks: `$STEP` replaced, and the `$i` section written
 * out once per block of the step where `step * tokens` copies stay within MAX_STEP_COPIES (always for one
 * block a step), else a loop over the step's blocks. In the section `$i` names a copy's values and `$I`
 * is its block's index in the step. (A loop over pairs or quads of written-out blocks was slower still:
 * Q4_K at t = 4 20.1 ms.)
 */
export function walkSteps(template: string, step: number, tokens: number): string {
  const t = template.replaceAll('$STEP', String(step));
  const { before, body, after } = section(t, '$i');
  const copy = (c: number, index: string) => body.map((l) => l.replaceAll('$I', index).replaceAll('$i', String(c)));
  if (step === 1 || step * tokens <= MAX_STEP_COPIES) return [...before, ...Array.from({ length: step }, (_, c) => copy(c, String(c))).flat(), ...after].join('\n');
  return [...before, `for (var i = 0u; i < ${step}u; i++) {`, ...copy(0, 'i'), '}', ...after].join('\n');
}

/** The lines between a line `// <variable> {` and the next `// <variable> }`, and those around them. */
function section(template: string, variable: string): { before: string[]; body: string[]; after: string[] } {
  const lines = template.split('\n');
  const open = lines.findIndex((l) => l.trim() === `// ${variable} {`);
  const close = lines.findIndex((l, i) => i > open && l.trim() === `// ${variable} }`);
  if (open < 0 || close < 0) throw new Error(`unroll: no section "// ${variable} {" ... "// ${variable} }"`);
  return { before: lines.slice(0, open), body: lines.slice(open + 1, close), after: lines.slice(close + 1) };
}

/**
 * Every run of consecutive lines containing `variable` written out for indices 0 .. n-1 in order: in full
 * where n <= chunk, else as a loop over the floor(n / chunk) whole chunks, the run written out once a
 * chunk with the variable replaced by `chunk_base + i`, then the rest written out. `trips` is a WGSL
 * expression for the number of whole chunks that the shader compiler cannot fold (a uniform), so that it
 * does not unroll the loop back into n copies (see kernels/train/attention.ts for why that matters).
 */
export function unrollLinesInChunks(template: string, variable: string, n: number, chunk: number, trips: string): string {
  if (n <= chunk) return unrollLines(template, variable, n);
  const whole = Math.floor(n / chunk) * chunk;
  const out: string[] = [];
  const lines = template.split('\n');
  // Comments that name the variable are no code to repeat.
  const repeated = (line: string) => line.includes(variable) && !line.trimStart().startsWith('//');
  for (let i = 0; i < lines.length; ) {
    if (!repeated(lines[i])) {
      out.push(lines[i++]);
      continue;
    }
    const run: string[] = [];
    while (i < lines.length && repeated(lines[i])) run.push(lines[i++]);
    out.push(`for (var chunk_i = 0u; chunk_i < ${trips}; chunk_i++) {`, `  let chunk_base = chunk_i * ${chunk}u;`);
    for (const line of run) for (let c = 0; c < chunk; c++) out.push(line.replaceAll(variable, `chunk_base + ${c}`));
    out.push('}');
    for (const line of run) for (let d = whole; d < n; d++) out.push(line.replaceAll(variable, String(d)));
  }
  return out.join('\n');
}

function expand(lines: string[], v: string, n: number): string[] {
  return lines.flatMap((line) => (line.includes(v) ? Array.from({ length: n }, (_, i) => line.replaceAll(v, String(i))) : [line]));
}
