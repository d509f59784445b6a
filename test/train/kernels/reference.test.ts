/**
 * The CPU reference's backward functions are the derivatives of its forward functions: each is checked
 * against central finite differences in float64 through a random linear readout L = Σ r ∘ y.
 */
import { describe, expect, it } from 'vitest';
import * as ref from '../reference.ts';

function close(a: ref.Vec, b: ref.Vec, tol = 1e-6): void {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i])));
  expect(worst).toBeLessThan(tol);
}

describe('reference backward = finite differences', () => {
  it('linear (matmul): dX and dW', () => {
    const [T, inD, outD] = [3, 5, 4];
    const x = ref.random(T * inD, 1);
    const w = ref.random(outD * inD, 2);
    const r = ref.random(T * outD, 3);
    const { dx, dw } = ref.linearBackward(x, w, r, T, inD, outD);
    close(dx, ref.numericGradient((xx) => ref.dot(ref.linear(xx, w, T, inD, outD), r), x));
    close(dw, ref.numericGradient((ww) => ref.dot(ref.linear(x, ww, T, inD, outD), r), w));
  });

  it('LoRA projection: dX, dA, dB', () => {
    const [T, inD, outD, rank, scale] = [3, 6, 5, 2, 1.5];
    const x = ref.random(T * inD, 4);
    const w = ref.random(outD * inD, 5);
    const a = ref.random(rank * inD, 6);
    const b = ref.random(outD * rank, 7);
    const r = ref.random(T * outD, 8);
    const g = ref.loraLinearBackward(x, w, a, b, r, T, inD, outD, rank, scale);
    const f = (xx: ref.Vec, aa: ref.Vec, bb: ref.Vec) => ref.dot(ref.loraLinear(xx, w, aa, bb, T, inD, outD, rank, scale), r);
    close(g.dx, ref.numericGradient((xx) => f(xx, a, b), x));
    close(g.da, ref.numericGradient((aa) => f(x, aa, b), a));
    close(g.db, ref.numericGradient((bb) => f(x, a, bb), b));
  });

  it('rmsnorm', () => {
    const [rows, n, eps] = [3, 7, 1e-5];
    const x = ref.random(rows * n, 9);
    const w = ref.random(n, 10);
    const r = ref.random(rows * n, 11);
    close(ref.rmsnormBackward(x, w, r, rows, n, eps), ref.numericGradient((xx) => ref.dot(ref.rmsnorm(xx, w, rows, n, eps).y, r), x));
  });

  for (const neox of [false, true]) {
    it(`rope (${neox ? 'NeoX' : 'adjacent pairs'}, partial rotation): the gradient is the reverse rotation`, () => {
      const cfg = { heads: 2, headDim: 8, nRot: 6, neox, base: 10000, freqScale: 0.5 };
      const positions = [0, 3, 17];
      const x = ref.random(3 * 2 * 8, 12);
      const r = ref.random(x.length, 13);
      close(ref.rope(r, positions, cfg, -1), ref.numericGradient((xx) => ref.dot(ref.rope(xx, positions, cfg), r), x));
    });
  }

  it('attention (causal, GQA, two packed sequences)', () => {
    const a = { heads: 4, kvHeads: 2, headDim: 3, spans: [[0, 3], [0, 3], [0, 3], [3, 5], [3, 5]] as [number, number][] };
    const T = a.spans.length;
    const q = ref.random(T * 4 * 3, 14);
    const k = ref.random(T * 2 * 3, 15);
    const v = ref.random(T * 2 * 3, 16);
    const r = ref.random(T * 4 * 3, 17);
    const g = ref.attentionBackward(q, k, v, r, a);
    close(g.dq, ref.numericGradient((qq) => ref.dot(ref.attention(qq, k, v, a).out, r), q));
    close(g.dk, ref.numericGradient((kk) => ref.dot(ref.attention(q, kk, v, a).out, r), k));
    close(g.dv, ref.numericGradient((vv) => ref.dot(ref.attention(q, k, vv, a).out, r), v));
    // Causality and packing: the second sequence's first token sees only itself.
    const { out } = ref.attention(q, k, v, a);
    for (let h = 0; h < 4; h++) for (let d = 0; d < 3; d++) expect(out[(3 * 4 + h) * 3 + d]).toBeCloseTo(v[(3 * 2 + Math.floor(h / 2)) * 3 + d], 12);
  });

  it('swiglu', () => {
    const gate = ref.random(10, 18, 3);
    const up = ref.random(10, 19);
    const r = ref.random(10, 20);
    const g = ref.swigluBackward(gate, up, r);
    close(g.dgate, ref.numericGradient((gg) => ref.dot(ref.swiglu(gg, up), r), gate));
    close(g.dup, ref.numericGradient((uu) => ref.dot(ref.swiglu(gate, uu), r), up));
  });

  it('masked cross-entropy: the gradient of the mean over counted positions', () => {
    const [T, V] = [4, 6];
    const logits = ref.random(T * V, 21, 3);
    const targets = [1, 5, 0, 2];
    const mask = [1, 0, 1, 1];
    const { dlogits, counted } = ref.crossEntropy(logits, targets, mask, V);
    expect(counted).toBe(3);
    const mean = (l: ref.Vec) => ref.crossEntropy(l, targets, mask, V).loss.reduce((s, x) => s + x, 0) / counted;
    close(dlogits, ref.numericGradient(mean, logits));
    // Masked rows get no gradient.
    for (let i = 0; i < V; i++) expect(Math.abs(dlogits[V + i])).toBe(0);
  });

  it('AdamW: bias-corrected first step moves each parameter by about lr against its clipped gradient sign', () => {
    const p = ref.random(6, 22);
    const g = ref.random(6, 23, 10);
    const zero = new Float64Array(6);
    const o = { lr: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0, clipNorm: 1, step: 1 };
    const r = ref.adamw(p, g, zero, zero, o);
    for (let i = 0; i < 6; i++) expect(r.p[i] - p[i]).toBeCloseTo(-0.01 * Math.sign(g[i]), 6);
    // Clipping scales the moments, not the update direction; weight decay is decoupled.
    expect(r.m[0]).toBeCloseTo(0.1 * g[0] * Math.min(1, 1 / (r.norm + 1e-6)), 12);
    const decayed = ref.adamw(p, new Float64Array(6), zero, zero, { ...o, weightDecay: 0.5 });
    for (let i = 0; i < 6; i++) expect(decayed.p[i]).toBeCloseTo(p[i] * (1 - 0.005), 12);
  });
});
