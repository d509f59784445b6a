/**
 * Every function variable declared inside a loop body gets an explicit value. WGSL makes `var x: T;`
 * the zero value each time its declaration runs, but Dawn's SPIR-V (webgpu 0.6.2: SwiftShader and
 * Vulkan GPUs) zeroes it once an invocation, so a subgroup looping over several rows once added each
 * row's sum to the one before (kernels/README.md, Conventions). Checked on the source text, since the
 * adapters the suite runs on rarely take such a loop twice.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../kernels');

function wgslFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? wgslFiles(join(dir, e.name)) : e.name.endsWith('.wgsl') ? [join(dir, e.name)] : []));
}

/** Lines (1-based) of `var name: T;` declarations, without a value, inside a for, while or loop body. */
export function uninitialisedLoopVars(source: string): number[] {
  const text = source.replace(/\/\/[^\n]*/g, (c) => ' '.repeat(c.length)).replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '));
  const blocks: boolean[] = [];
  const found: number[] = [];
  let statement = 0;
  // A for header's own semicolons are inside its parentheses.
  let parens = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') parens++;
    else if (c === ')') parens--;
    else if (parens > 0) continue;
    if (c === '{') {
      blocks.push(/^\s*(for|while|loop)\b/.test(text.slice(statement, i)));
      statement = i + 1;
    } else if (c === '}') {
      blocks.pop();
      statement = i + 1;
    } else if (c === ';') {
      const decl = /^\s*var\s+[A-Za-z_]\w*\s*:[^=]*$/.exec(text.slice(statement, i));
      if (decl && blocks.includes(true)) found.push(text.slice(0, statement + decl[0].search(/\S/)).split('\n').length);
      statement = i + 1;
    }
  }
  return found;
}

describe('WGSL loop variables', () => {
  it('finds a declaration without a value in a loop body, and not one with a value or outside loops', () => {
    const src = ['fn f() {', '  var a: f32;', '  for (var j = 0u; j < 4u; j++) {', '    var acc: array<f32, 8>;', '    var ok = array<f32, 8>();', '    if (j > 1u) { var b: vec4f; }', '  }', '  loop { var c: u32; break; }', '}'].join('\n');
    expect(uninitialisedLoopVars(src)).toEqual([4, 6, 8]);
  });

  it.each(wgslFiles(ROOT).map((f) => ({ file: relative(ROOT, f), path: f })))('$file declares no loop variable without a value', ({ path }) => {
    expect(uninitialisedLoopVars(readFileSync(path, 'utf8'))).toEqual([]);
  });
});
