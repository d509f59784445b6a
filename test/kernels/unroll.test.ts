/**
 * The template expansion CPU rasterisers' kernels are written with (kernels/unroll.ts), and the block
 * walks' steps (quant/block-walk.wgsl): which blocks share a step per type, and when a step's blocks are
 * written out or looped.
 */
import { describe, expect, it } from 'vitest';
import { GgmlType } from '../../ggml/types.ts';
import { BLOCK_WALK_TYPES, walkStep } from '../../kernels/quant/layouts.ts';
import { MAX_STEP_COPIES, unrollLines, unrollLinesInChunks, unrollRowsTokens, walkSteps } from '../../kernels/unroll.ts';

const TEMPLATE = ['for (b += $STEPu) {', '  w_step(w$r);', '  // $i {', '  let k$r_$i = w_step_block(w$r, $I);', '  acc$r_$t += dot(k$r_$i, x$t);', '  // $i }', '}'].join('\n');

describe('unroll.ts', () => {
  it('unrollLinesInChunks writes runs of lines out in full up to a chunk, else loops over whole chunks and writes out the rest, in order', () => {
    const t = ['// a comment naming $d stays as it is', 'var s = 0.0;', 's += a[$du];', 'b[$du] = s;', 'let x = s;', 'c[$du] = x;'].join('\n');
    expect(unrollLinesInChunks(t, '$d', 2, 4, 'n')).toBe(unrollLines(t, '$d', 2));
    expect(unrollLines(t, '$d', 2).split('\n').slice(2)).toEqual(['var s = 0.0;', 's += a[0u];', 's += a[1u];', 'b[0u] = s;', 'b[1u] = s;', 'let x = s;', 'c[0u] = x;', 'c[1u] = x;']);
    expect(unrollLinesInChunks(t, '$d', 5, 2, 'params.chunks').split('\n')).toEqual([
      '// a comment naming $d stays as it is',
      'var s = 0.0;',
      'for (var chunk_i = 0u; chunk_i < params.chunks; chunk_i++) {',
      '  let chunk_base = chunk_i * 2u;',
      's += a[chunk_base + 0u];',
      's += a[chunk_base + 1u];',
      'b[chunk_base + 0u] = s;',
      'b[chunk_base + 1u] = s;',
      '}',
      's += a[4u];',
      'b[4u] = s;',
      'let x = s;',
      'for (var chunk_i = 0u; chunk_i < params.chunks; chunk_i++) {',
      '  let chunk_base = chunk_i * 2u;',
      'c[chunk_base + 0u] = x;',
      'c[chunk_base + 1u] = x;',
      '}',
      'c[4u] = x;',
    ]);
  });

  it('walkSteps writes the step out while steps x tokens stays within MAX_STEP_COPIES, its lines together per block', () => {
    expect(MAX_STEP_COPIES).toBe(16);
    expect(walkSteps(TEMPLATE, 2, 8).split('\n')).toEqual([
      'for (b += 2u) {',
      '  w_step(w$r);',
      '  let k$r_0 = w_step_block(w$r, 0);',
      '  acc$r_$t += dot(k$r_0, x$t);',
      '  let k$r_1 = w_step_block(w$r, 1);',
      '  acc$r_$t += dot(k$r_1, x$t);',
      '}',
    ]);
    // One block a step is always written out (a loop of one was 1.45x the time).
    expect(walkSteps(TEMPLATE, 1, 64)).toBe(['for (b += 1u) {', '  w_step(w$r);', '  let k$r_0 = w_step_block(w$r, 0);', '  acc$r_$t += dot(k$r_0, x$t);', '}'].join('\n'));
  });

  it('walkSteps makes a step a loop over its blocks past MAX_STEP_COPIES', () => {
    expect(walkSteps(TEMPLATE, 8, 3).split('\n')).toEqual([
      'for (b += 8u) {',
      '  w_step(w$r);',
      'for (var i = 0u; i < 8u; i++) {',
      '  let k$r_0 = w_step_block(w$r, i);',
      '  acc$r_$t += dot(k$r_0, x$t);',
      '}',
      '}',
    ]);
    expect(walkSteps(TEMPLATE, 4, 4)).not.toContain('for (var i');
    expect(walkSteps(TEMPLATE, 4, 5)).toContain('for (var i = 0u; i < 4u; i++)');
  });

  it('every name is distinct per block, row and token once rows and tokens are written out', () => {
    const code = unrollRowsTokens(walkSteps(TEMPLATE, 2, 2), 2, 2);
    expect(code.match(/let k\d_\d/g)).toEqual(['let k0_0', 'let k1_0', 'let k0_1', 'let k1_1']);
    expect(code.match(/acc\d_\d \+= dot\(k\d_\d, x\d\)/g)).toHaveLength(8);
  });

  it('names a missing section', () => {
    expect(() => walkSteps('a\nb', 2, 1)).toThrow(/no section "\/\/ \$i \{"/);
  });

  it("each block-walking type's step is the blocks that share its weight words", () => {
    expect([...BLOCK_WALK_TYPES.keys()].map((t) => [GgmlType[t], walkStep(t)])).toEqual([
      ['Q8_0', 1],
      ['Q4_0', 1],
      ['Q4_K', 8],
      ['Q6_K', 4],
    ]);
    expect(() => walkStep(GgmlType.F16)).toThrow(/F16 has no block walk/);
  });
});
