/**
 * Weight stores (kernels/runtime/weights.ts): a storage buffer, or an rgba32uint texture where the device
 * keeps weights in textures (llvmpipe). Writes at any whole-vec4 offset land where a kernel's w_ld(i)
 * reads them, across texture rows; both kinds are tested on every adapter.
 */
import { describe, expect, it } from 'vitest';
import { ParamArena } from '../../kernels/runtime/arena.ts';
import { createWeightStore, isTexture, WEIGHT_TEXTURE_WIDTH, weightStoreBytes, writeWeights } from '../../kernels/runtime/weights.ts';
import { KernelContext } from '../../kernels/runtime/context.ts';
import { readU32, runPass, testContext } from '../helpers/gpu.ts';

const base = await testContext();

describe.each([false, true])('weight store (textures: %s)', (textures) => {
  const ctx = new KernelContext(base.device, { ...base.caps, weightTextures: textures });

  it('reads back through w_ld() what writes at straddling offsets put there', async () => {
    // Three texture rows and a part: writes that start and end mid-row, and one of whole rows.
    const vec4s = 3 * WEIGHT_TEXTURE_WIDTH + 1000;
    const store = createWeightStore(ctx.device, ctx.caps, 'test-w', vec4s * 16);
    expect(isTexture(store)).toBe(textures);
    expect(weightStoreBytes(store)).toBeGreaterThanOrEqual(vec4s * 16);
    const words = new Uint32Array(vec4s * 4 + 8);
    for (let i = 0; i < words.length; i++) words[i] = (i * 2654435761) >>> 0;
    // A view that does not start at its buffer's first byte, as the loader's repacked chunks may be.
    const bytes = new Uint8Array(words.buffer, 32, vec4s * 16);
    for (const [from, to] of [
      [0, 1000],
      [1000, WEIGHT_TEXTURE_WIDTH],
      [WEIGHT_TEXTURE_WIDTH, 3 * WEIGHT_TEXTURE_WIDTH],
      [3 * WEIGHT_TEXTURE_WIDTH, vec4s],
    ]) {
      writeWeights(ctx.device, store, from * 16, bytes.subarray(from * 16, to * 16));
    }
    expect(() => writeWeights(ctx.device, store, 8, bytes.subarray(0, 16))).toThrow(/whole vec4s/);
    expect(() => writeWeights(ctx.device, store, weightStoreBytes(store), bytes.subarray(0, 16))).toThrow(/runs past/);

    const k = ctx.kernel({
      label: `weight-store-copy-${textures}`,
      code: `
@group(0) @binding(1) var<storage, read_write> out: array<vec4u>;
struct Params { n: u32 }
@group(1) @binding(0) var<uniform> p: Params;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < p.n) { out[g.x] = w_ld(g.x); }
}`,
      bindings: ['weights', 'write'],
    });
    const out = ctx.storage('out', vec4s * 16);
    await runPass(ctx, (pass: GPUComputePassEncoder, arena: ParamArena) => {
      const s = arena.slot();
      arena.u32[s] = vec4s;
      arena.dispatch(pass, k, k.bind([store, out]), s, Math.ceil(vec4s / 64));
    });
    expect(await readU32(ctx, out, vec4s * 4)).toEqual(new Uint32Array(words.buffer, 32, vec4s * 4));
  });
});
