/**
 * The lab's int8 subgroup-matrix probe (kernels/probes/subgroup-matrix.ts). Its kernels need Dawn's
 * experimental subgroup-matrix feature, which no adapter here offers: what runs here is the writing of
 * the builtins' calls in both of Dawn's syntaxes, and the probe's report on a device without the feature
 * (both syntaxes tried, each failing with the compiler's message, no tile measured).
 */
import { describe, expect, it } from 'vitest';
import { expandSubgroupMatrix, probeSubgroupMatrix, readingsThatFit, type HelloPlacement } from '../../kernels/probes/subgroup-matrix.ts';
import { xorshift32 } from '../../kernels/probes/xorshift.ts';
import { testContext } from '../helpers/gpu.ts';

const ctx = await testContext();

describe('int8 subgroup-matrix probe', () => {
  const code = 'let a = LOAD_LEFT(w, (n0 + 16u) * k + b * 32u, k);\nlet c = LOAD_RIGHT(x, f(t0, 2u), k);\nSTORE(scratch, 2u * REGION, subgroupMatrixMultiply<i32>(a, c), 16u);';

  it('writes loads and stores with the majorness as a template parameter (current Dawn)', () => {
    expect(expandSubgroupMatrix(code, 'template')).toBe(
      'let a = subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>, row_major>(&w, (n0 + 16u) * k + b * 32u, k);\n' +
        'let c = subgroupMatrixLoad<subgroup_matrix_right<i8, 16, 32>, col_major>(&x, f(t0, 2u), k);\n' +
        'subgroupMatrixStore<row_major>(&scratch, 2u * REGION, subgroupMatrixMultiply<i32>(a, c), 16u);',
    );
  });

  it('and as an argument (earlier Dawn)', () => {
    expect(expandSubgroupMatrix(code, 'argument')).toBe(
      'let a = subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>>(&w, (n0 + 16u) * k + b * 32u, false, k);\n' +
        'let c = subgroupMatrixLoad<subgroup_matrix_right<i8, 16, 32>>(&x, f(t0, 2u), true, k);\n' +
        'subgroupMatrixStore(&scratch, 2u * REGION, subgroupMatrixMultiply<i32>(a, c), false, 16u);',
    );
  });

  it("dividing the loads' offsets or strides by 4 where they count the array's i32 words", () => {
    const load = 'LOAD_LEFT(w, n0 * k + b * 32u, k)';
    expect(expandSubgroupMatrix(load, 'template', { offset: 'words', stride: 'bytes' })).toBe('subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>, row_major>(&w, (n0 * k + b * 32u) / 4u, k)');
    expect(expandSubgroupMatrix(load, 'template', { offset: 'bytes', stride: 'words' })).toBe('subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>, row_major>(&w, n0 * k + b * 32u, (k) / 4u)');
    expect(expandSubgroupMatrix(load, 'argument', { offset: 'words', stride: 'words' })).toBe('subgroupMatrixLoad<subgroup_matrix_left<i8, 32, 16>>(&w, (n0 * k + b * 32u) / 4u, false, (k) / 4u)');
  });

  it('names the reading of offset and stride a product was loaded with, and only it', () => {
    const next = xorshift32(5);
    const bytes = (n: number) => Int8Array.from({ length: n }, () => (next() % 256) - 128);
    const p: HelloPlacement = { leftOffset: 64, leftStride: 64, rightOffset: 32, rightStride: 64 };
    const [w, x] = [bytes(4 * 64 + 16 * 4 * 64), bytes(4 * 32 + 16 * 4 * 64)];
    // The 16 x 16 product as a device counting offsets in words and strides in bytes would load it.
    const got = new Int32Array(256);
    for (let r = 0; r < 16; r++) for (let c = 0; c < 16; c++) for (let k = 0; k < 32; k++) got[r * 16 + c] += w[4 * 64 + r * 64 + k] * x[4 * 32 + c * 64 + k];
    expect(readingsThatFit(got, w, x, p)).toEqual([{ offset: 'words', stride: 'bytes' }]);
    got[17] += 1;
    expect(readingsThatFit(got, w, x, p)).toEqual([]);
  });

  it.skipIf(ctx.device.features.has('chromium-experimental-subgroup-matrix' as GPUFeatureName))('reports both syntaxes failing, and no tile, on a device without the feature', async () => {
    const lines: string[] = [];
    const probe = await probeSubgroupMatrix(ctx.device, [{ label: 'o', n: 64, k: 64, copies: 1 }], 32, (l) => lines.push(l));
    expect(probe.syntax).toBeUndefined();
    expect(probe.tried.map((t) => t.syntax)).toEqual(['template', 'argument']);
    // The first extension the device lacks: subgroups on llvmpipe, subgroup matrices on SwiftShader.
    for (const t of probe.tried) expect(t.outcome).toMatch(/^failed: .*extension '(subgroups|chromium_experimental_subgroup_matrix)' is not allowed/);
    expect(probe.tile).toEqual([]);
    expect(lines).toHaveLength(2);
  });
});
