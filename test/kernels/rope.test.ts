import { describe, expect, it } from 'vitest';
import { RopeKernel } from '../../kernels/rope.ts';
import { readF32, runPass, testContext } from '../helpers/gpu.ts';
import { maxRelError, randomF32 } from '../helpers/random.ts';

function ropeRef(x: Float32Array, pos: number[], heads: number, hd: number, nRot: number, neox: boolean, base: number, scale: number, factors?: Float32Array): Float32Array {
  const y = x.slice();
  for (let t = 0; t < pos.length; t++) {
    for (let h = 0; h < heads; h++) {
      const b = (t * heads + h) * hd;
      for (let i = 0; i < nRot / 2; i++) {
        let theta = pos[t] * scale * Math.pow(base, (-2 * i) / nRot);
        if (factors) theta /= factors[i];
        const [a, c] = neox ? [b + i, b + i + nRot / 2] : [b + 2 * i, b + 2 * i + 1];
        const x0 = x[a];
        const x1 = x[c];
        y[a] = x0 * Math.cos(theta) - x1 * Math.sin(theta);
        y[c] = x0 * Math.sin(theta) + x1 * Math.cos(theta);
      }
    }
  }
  return y;
}

describe('rope kernel', () => {
  const cases = [
    { name: 'normal order', heads: 4, hd: 16, nRot: 16, neox: false, factors: false },
    { name: 'neox order', heads: 3, hd: 32, nRot: 32, neox: true, factors: false },
    { name: 'partial rotary', heads: 2, hd: 32, nRot: 16, neox: true, factors: false },
    { name: 'frequency factors', heads: 2, hd: 16, nRot: 16, neox: false, factors: true },
  ];
  for (const c of cases) {
    it(`matches the reference (${c.name})`, async () => {
      const ctx = await testContext();
      const pos = [0, 1, 7, 100, 2047];
      const x = randomF32(pos.length * c.heads * c.hd, 11, 2);
      const factors = c.factors ? Float32Array.from({ length: c.nRot / 2 }, (_, i) => 1 + i * 0.5) : new Float32Array([1]);
      const k = new RopeKernel(ctx);
      const bx = ctx.storage('x', x.byteLength, x);
      const bp = ctx.storage('pos', pos.length * 4, Uint32Array.from(pos));
      const bf = ctx.storage('f', factors.byteLength, factors);
      const g = k.bind(bx, bp, bf);
      await runPass(ctx, (pass, arena) =>
        k.encode(pass, arena, g, { tokens: pos.length, heads: c.heads, headDim: c.hd, nRot: c.nRot, neox: c.neox, freqBase: 10000, freqScale: 1, useFactors: c.factors }),
      );
      const y = await readF32(ctx, bx, x.length);
      // GPU sin/cos of large angles (pos 2047) differ from Math's in the last bits.
      expect(maxRelError(y, ropeRef(x, pos, c.heads, c.hd, c.nRot, c.neox, 10000, 1, c.factors ? factors : undefined))).toBeLessThan(2e-3);
    });
  }
});
