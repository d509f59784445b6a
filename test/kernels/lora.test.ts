/**
 * The LoRA kernels against a TypeScript reference: one dispatch pair over rows that use different
 * adapters (of different ranks) and rows that use none, over a group of targets one adapter leaves out.
 */
import { describe, expect, it } from 'vitest';
import { LORA_ENTRY_WORDS, LORA_NO_ADAPTER, LoraAKernel, LoraBKernel, loraScratchStride, type LoraAVariant } from '../../kernels/lora.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

const LAYERS = 3;
const TARGETS_PER_LAYER = 7;
const LAYER = 1;

interface Mat {
  rank: number;
  a: Float32Array;
  b: Float32Array;
  aOff: number;
  bOff: number;
  scale: number;
}

describe.each(['workgroup', 'rows'] as LoraAVariant[])('LoRA kernels (lora-a %s)', (variant) => {
  it('add scale · B(Ax) per row with each row its own adapter, nothing on rows without one', async () => {
    const ctx = await testContext();
    const inDim = 70; // not a multiple of the workgroup: the reduction's tail must count
    const outs = [48, 16, 24];
    const targets = [0, 1, 2];
    const yOffsets = [0, 48, 64];
    const yStride = 88 + 5; // rows of y wider than the group's outputs: other columns stay untouched
    const T = 6;
    const rowAdapter = [0, LORA_NO_ADAPTER, 1, 0, 1, LORA_NO_ADAPTER];
    // Adapter 0: rank 8 on all three members; adapter 1: rank 3 on members 0 and 2 only.
    const poolValues: number[] = [];
    const dir = new Uint32Array(2 * LAYERS * TARGETS_PER_LAYER * LORA_ENTRY_WORDS);
    const dirF = new Float32Array(dir.buffer);
    const mats: (Mat | undefined)[][] = [[], []];
    let seed = 10;
    const addMat = (adapter: number, m: number, rank: number, scale: number) => {
      const a = randomF32(rank * inDim, seed++, 0.5);
      const b = randomF32(outs[m] * rank, seed++, 0.5);
      const mat = { rank, a, b, aOff: poolValues.length, bOff: poolValues.length + a.length, scale };
      poolValues.push(...a, ...b);
      const e = ((adapter * LAYERS + LAYER) * TARGETS_PER_LAYER + targets[m]) * LORA_ENTRY_WORDS;
      dir[e] = mat.aOff;
      dir[e + 1] = mat.bOff;
      dir[e + 2] = rank;
      dirF[e + 3] = scale;
      mats[adapter][m] = mat;
    };
    for (let m = 0; m < 3; m++) addMat(0, m, 8, 0.75);
    addMat(1, 0, 3, 2.5);
    addMat(1, 2, 3, -1.25);
    // A decoy entry for another layer of adapter 0: must not be used.
    const decoy = ((0 * LAYERS + 2) * TARGETS_PER_LAYER + 0) * LORA_ENTRY_WORDS;
    dir[decoy + 2] = 8;
    dirF[decoy + 3] = 100;

    const xStride = inDim + 2;
    const x = randomF32(T * xStride, 3);
    const y0 = randomF32(T * yStride, 4);
    const pool = ctx.storage('pool', poolValues.length * 4, new Float32Array(poolValues));
    const directory = ctx.storage('dir', dir.byteLength, dir);
    const rows = ctx.storage('rows', T * 4, new Uint32Array(rowAdapter));
    const maxRank = 8;
    const scratch = ctx.storage('t', T * loraScratchStride(3, maxRank) * 4);
    const xb = ctx.storage('x', x.byteLength, x);
    const yb = ctx.storage('y', y0.byteLength, y0);
    const ka = new LoraAKernel(ctx, variant);
    const kb = new LoraBKernel(ctx);
    const bufs = { pool, directory, rowAdapter: rows, scratch };
    const group = { tokens: T, layer: LAYER, layers: LAYERS, targetsPerLayer: TARGETS_PER_LAYER, targets, maxRank };
    await runPass(ctx, (pass, arena) => {
      ka.encode(pass, arena, ka.bind(bufs, xb), { ...group, inDim, xOffset: 1, xStride });
      kb.encode(pass, arena, kb.bind(bufs, yb), { ...group, outs, yOffsets, yStride });
    });

    const want = y0.slice();
    let changed = 0;
    for (let t = 0; t < T; t++) {
      const ad = rowAdapter[t];
      if (ad === LORA_NO_ADAPTER) continue;
      for (let m = 0; m < 3; m++) {
        const mat = mats[ad][m];
        if (!mat) continue;
        const tv = new Float64Array(mat.rank);
        for (let r = 0; r < mat.rank; r++) for (let i = 0; i < inDim; i++) tv[r] += mat.a[r * inDim + i] * x[t * xStride + 1 + i];
        for (let o = 0; o < outs[m]; o++) {
          let acc = 0;
          for (let r = 0; r < mat.rank; r++) acc += mat.b[o * mat.rank + r] * tv[r];
          want[t * yStride + yOffsets[m] + o] += mat.scale * acc;
          changed++;
        }
      }
    }
    expect(changed).toBe(2 * 88 + 2 * 72);
    const got = await readF32(ctx, yb, T * yStride);
    expect(maxRelError(got, want)).toBeLessThan(1e-5);
    // Rows without an adapter come back bit for bit.
    for (const t of [1, 5]) expect(got.subarray(t * yStride, (t + 1) * yStride)).toEqual(y0.subarray(t * yStride, (t + 1) * yStride));
  });

  it('covers thousands of tokens (past 65535 workgroups, a 2-D grid, for the workgroup variant)', async () => {
    const ctx = await testContext();
    const inDim = 16;
    const rank = 4;
    const T = 9000; // T · 2 members · rank = 72000 workgroups > 65535
    const outs = [4, 4];
    const dir = new Uint32Array(1 * 1 * 2 * LORA_ENTRY_WORDS);
    const dirF = new Float32Array(dir.buffer);
    const a = randomF32(rank * inDim, 1);
    const b = randomF32(4 * rank, 2);
    for (let m = 0; m < 2; m++) {
      dir[m * 4] = 0;
      dir[m * 4 + 1] = a.length;
      dir[m * 4 + 2] = rank;
      dirF[m * 4 + 3] = m + 1;
    }
    const poolF = new Float32Array([...a, ...b]);
    const x = randomF32(T * inDim, 3);
    const bufs = {
      pool: ctx.storage('pool', poolF.byteLength, poolF),
      directory: ctx.storage('dir', dir.byteLength, dir),
      rowAdapter: ctx.storage('rows', T * 4, new Uint32Array(T)),
      scratch: ctx.storage('t', T * loraScratchStride(2, rank) * 4),
    };
    const xb = ctx.storage('x', x.byteLength, x);
    const yb = ctx.storage('y', T * 8 * 4);
    const ka = new LoraAKernel(ctx, variant);
    const kb = new LoraBKernel(ctx);
    const group = { tokens: T, layer: 0, layers: 1, targetsPerLayer: 2, targets: [0, 1], maxRank: rank };
    await runPass(ctx, (pass, arena) => {
      ka.encode(pass, arena, ka.bind(bufs, xb), { ...group, inDim, xOffset: 0, xStride: inDim });
      kb.encode(pass, arena, kb.bind(bufs, yb), { ...group, outs, yOffsets: [0, 4], yStride: 8 });
    });
    const got = await readF32(ctx, yb, T * 8);
    const want = new Float32Array(T * 8);
    for (let t = 0; t < T; t++) {
      const tv = new Float64Array(rank);
      for (let r = 0; r < rank; r++) for (let i = 0; i < inDim; i++) tv[r] += a[r * inDim + i] * x[t * inDim + i];
      for (let m = 0; m < 2; m++)
        for (let o = 0; o < 4; o++) {
          let acc = 0;
          for (let r = 0; r < rank; r++) acc += b[o * rank + r] * tv[r];
          want[t * 8 + m * 4 + o] = (m + 1) * acc;
        }
    }
    expect(maxRelError(got, want)).toBeLessThan(1e-5);
  });
});
