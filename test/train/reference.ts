import { xorshift32 } from '../../kernels/probes/xorshift.ts';
/**
 * A plain CPU reference of the trainer's math, op by op, forward and backward, in float64: what the
 * training kernels are checked against (test/train/kernels/), itself checked against finite differences.
 * Matrices are row-major number arrays; shapes are passed explicitly. Slow and simple on purpose.
 */
export type Vec = Float64Array;

export const vec = (values: ArrayLike<number>): Vec => Float64Array.from(values);

/** op(A)[i, k] with op(A) of shape m × k: A stored k × m when transposed. */
function at(a: Vec, transposed: boolean, rows: number, cols: number, i: number, j: number): number {
  return transposed ? a[j * rows + i] : a[i * cols + j];
}

/** C (m × n) = op(A) · op(B). */
export function matmul(a: Vec, b: Vec, m: number, n: number, k: number, transA = false, transB = false): Vec {
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) s += at(a, transA, m, k, i, p) * at(b, transB, k, n, p, j);
      c[i * n + j] = s;
    }
  return c;
}

/** Y = X · Wᵀ (X: T × in, W: out × in) and its gradients dX = dY · W, dW = dYᵀ · X. */
export function linear(x: Vec, w: Vec, T: number, inDim: number, outDim: number): Vec {
  return matmul(x, w, T, outDim, inDim, false, true);
}
export function linearBackward(x: Vec, w: Vec, dy: Vec, T: number, inDim: number, outDim: number): { dx: Vec; dw: Vec } {
  return { dx: matmul(dy, w, T, inDim, outDim), dw: matmul(dy, x, outDim, inDim, T, true, false) };
}

export function rmsnorm(x: Vec, w: ArrayLike<number>, rows: number, n: number, eps: number): { y: Vec; rstd: Vec } {
  const y = new Float64Array(rows * n);
  const rstd = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < n; i++) ss += x[r * n + i] ** 2;
    rstd[r] = 1 / Math.sqrt(ss / n + eps);
    for (let i = 0; i < n; i++) y[r * n + i] = x[r * n + i] * rstd[r] * w[i];
  }
  return { y, rstd };
}
export function rmsnormBackward(x: Vec, w: ArrayLike<number>, dy: Vec, rows: number, n: number, eps: number): Vec {
  const { rstd } = rmsnorm(x, w, rows, n, eps);
  const dx = new Float64Array(rows * n);
  for (let r = 0; r < rows; r++) {
    let dot = 0;
    for (let i = 0; i < n; i++) dot += w[i] * dy[r * n + i] * x[r * n + i];
    const k = (rstd[r] ** 3 * dot) / n;
    for (let i = 0; i < n; i++) dx[r * n + i] = rstd[r] * w[i] * dy[r * n + i] - x[r * n + i] * k;
  }
  return dx;
}

export interface RopeRef {
  heads: number;
  headDim: number;
  nRot: number;
  neox: boolean;
  base: number;
  freqScale: number;
}

/** Rotates rows of T × heads × headDim by position; direction −1 rotates back (the gradient). */
export function rope(x: Vec, positions: ArrayLike<number>, r: RopeRef, direction: 1 | -1 = 1): Vec {
  const y = Float64Array.from(x);
  const half = r.nRot / 2;
  for (let t = 0; t < positions.length; t++)
    for (let h = 0; h < r.heads; h++)
      for (let i = 0; i < half; i++) {
        const theta = positions[t] * r.freqScale * Math.pow(r.base, (-2 * i) / r.nRot);
        const c = Math.cos(theta);
        const s = Math.sin(theta) * direction;
        const base = (t * r.heads + h) * r.headDim;
        const a = r.neox ? base + i : base + 2 * i;
        const b = r.neox ? base + i + half : a + 1;
        y[a] = x[a] * c - x[b] * s;
        y[b] = x[a] * s + x[b] * c;
      }
  return y;
}

export interface AttentionRef {
  heads: number;
  kvHeads: number;
  headDim: number;
  /** [start, end) of each token's sequence (packed sequences). */
  spans: [number, number][];
}

function attentionProbs(q: Vec, k: Vec, a: AttentionRef, t: number, h: number): { s0: number; p: number[] } {
  const hd = a.headDim;
  const kvh = Math.floor(h / (a.heads / a.kvHeads));
  const [s0] = a.spans[t];
  const scores: number[] = [];
  for (let s = s0; s <= t; s++) {
    let dot = 0;
    for (let d = 0; d < hd; d++) dot += q[(t * a.heads + h) * hd + d] * k[(s * a.kvHeads + kvh) * hd + d];
    scores.push(dot / Math.sqrt(hd));
  }
  const m = Math.max(...scores);
  const e = scores.map((x) => Math.exp(x - m));
  const z = e.reduce((x, y) => x + y, 0);
  return { s0, p: e.map((x) => x / z) };
}

/** Causal GQA attention within each token's sequence; also the log-sum-exp of each (token, head)'s scores. */
export function attention(q: Vec, k: Vec, v: Vec, a: AttentionRef): { out: Vec; lse: Vec } {
  const T = a.spans.length;
  const hd = a.headDim;
  const out = new Float64Array(T * a.heads * hd);
  const lse = new Float64Array(T * a.heads);
  for (let t = 0; t < T; t++)
    for (let h = 0; h < a.heads; h++) {
      const kvh = Math.floor(h / (a.heads / a.kvHeads));
      const { s0, p } = attentionProbs(q, k, a, t, h);
      p.forEach((pv, j) => {
        for (let d = 0; d < hd; d++) out[(t * a.heads + h) * hd + d] += pv * v[((s0 + j) * a.kvHeads + kvh) * hd + d];
      });
      let m = -Infinity;
      const scores: number[] = [];
      for (let s = s0; s <= t; s++) {
        let dot = 0;
        for (let d = 0; d < hd; d++) dot += q[(t * a.heads + h) * hd + d] * k[(s * a.kvHeads + kvh) * hd + d];
        scores.push(dot / Math.sqrt(hd));
        m = Math.max(m, dot / Math.sqrt(hd));
      }
      lse[t * a.heads + h] = m + Math.log(scores.reduce((z, x) => z + Math.exp(x - m), 0));
    }
  return { out, lse };
}

export function attentionBackward(q: Vec, k: Vec, v: Vec, dout: Vec, a: AttentionRef): { dq: Vec; dk: Vec; dv: Vec } {
  const T = a.spans.length;
  const hd = a.headDim;
  const scale = 1 / Math.sqrt(hd);
  const dq = new Float64Array(q.length);
  const dk = new Float64Array(k.length);
  const dv = new Float64Array(v.length);
  for (let t = 0; t < T; t++)
    for (let h = 0; h < a.heads; h++) {
      const kvh = Math.floor(h / (a.heads / a.kvHeads));
      const { s0, p } = attentionProbs(q, k, a, t, h);
      const qi = (t * a.heads + h) * hd;
      const dp = p.map((_, j) => {
        let s = 0;
        for (let d = 0; d < hd; d++) s += dout[qi + d] * v[((s0 + j) * a.kvHeads + kvh) * hd + d];
        return s;
      });
      const dsum = p.reduce((s, pv, j) => s + pv * dp[j], 0);
      p.forEach((pv, j) => {
        const ki = ((s0 + j) * a.kvHeads + kvh) * hd;
        const ds = pv * (dp[j] - dsum) * scale;
        for (let d = 0; d < hd; d++) {
          dq[qi + d] += ds * k[ki + d];
          dk[ki + d] += ds * q[qi + d];
          dv[ki + d] += pv * dout[qi + d];
        }
      });
    }
  return { dq, dk, dv };
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

export function swiglu(gate: Vec, up: Vec): Vec {
  return gate.map((g, i) => g * sigmoid(g) * up[i]);
}
export function swigluBackward(gate: Vec, up: Vec, dh: Vec): { dgate: Vec; dup: Vec } {
  const dup = gate.map((g, i) => dh[i] * g * sigmoid(g));
  const dgate = gate.map((g, i) => dh[i] * up[i] * sigmoid(g) * (1 + g * (1 - sigmoid(g))));
  return { dgate, dup };
}

/** Per-token masked cross-entropy and the gradient of Σ loss / counted. */
export function crossEntropy(logits: Vec, targets: ArrayLike<number>, mask: ArrayLike<number>, vocab: number): { loss: Vec; dlogits: Vec; counted: number } {
  const T = targets.length;
  const counted = Array.from(mask).filter((x) => x !== 0).length;
  const loss = new Float64Array(T);
  const dlogits = new Float64Array(T * vocab);
  for (let t = 0; t < T; t++) {
    const row = logits.subarray(t * vocab, (t + 1) * vocab);
    const m = Math.max(...row);
    const lse = m + Math.log(row.reduce((z, x) => z + Math.exp(x - m), 0));
    loss[t] = mask[t] ? mask[t] * (lse - row[targets[t]]) : 0;
    for (let i = 0; i < vocab; i++) dlogits[t * vocab + i] = ((Math.exp(row[i] - lse) - (i === targets[t] ? 1 : 0)) * mask[t]) / counted;
  }
  return { loss, dlogits, counted };
}

export interface AdamWRef {
  lr: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  weightDecay: number;
  clipNorm: number;
  /** From 1. */
  step: number;
}

/** One AdamW step with global clipping, as torch's clip_grad_norm_ and AdamW do it. */
export function adamw(p: Vec, g: Vec, m: Vec, v: Vec, o: AdamWRef): { p: Vec; m: Vec; v: Vec; norm: number } {
  const norm = Math.sqrt(g.reduce((s, x) => s + x * x, 0));
  const factor = o.clipNorm > 0 ? Math.min(1, o.clipNorm / (norm + 1e-6)) : 1;
  const m2 = new Float64Array(p.length);
  const v2 = new Float64Array(p.length);
  const p2 = new Float64Array(p.length);
  for (let i = 0; i < p.length; i++) {
    const gi = g[i] * factor;
    m2[i] = o.beta1 * m[i] + (1 - o.beta1) * gi;
    v2[i] = o.beta2 * v[i] + (1 - o.beta2) * gi * gi;
    const mh = m2[i] / (1 - o.beta1 ** o.step);
    const vh = v2[i] / (1 - o.beta2 ** o.step);
    p2[i] = p[i] * (1 - o.lr * o.weightDecay) - (o.lr * mh) / (Math.sqrt(vh) + o.epsilon);
  }
  return { p: p2, m: m2, v: v2, norm };
}

/** A LoRA projection y = x·Wᵀ + scale·(x·Aᵀ)·Bᵀ and the gradients of A, B and x. */
export function loraLinear(x: Vec, w: Vec, a: Vec, b: Vec, T: number, inDim: number, outDim: number, rank: number, scale: number): Vec {
  const u = matmul(x, a, T, rank, inDim, false, true);
  const y = linear(x, w, T, inDim, outDim);
  const d = matmul(u, b, T, outDim, rank, false, true);
  return y.map((yv, i) => yv + scale * d[i]);
}
export function loraLinearBackward(x: Vec, w: Vec, a: Vec, b: Vec, dy: Vec, T: number, inDim: number, outDim: number, rank: number, scale: number): { dx: Vec; da: Vec; db: Vec } {
  const u = matmul(x, a, T, rank, inDim, false, true);
  const g = matmul(dy, b, T, rank, outDim);
  const dx = matmul(dy, w, T, inDim, outDim);
  const dxl = matmul(g, a, T, inDim, rank);
  return {
    dx: dx.map((v, i) => v + scale * dxl[i]),
    da: matmul(g, x, rank, inDim, T, true, false).map((v) => v * scale),
    db: matmul(dy, u, outDim, rank, T, true, false).map((v) => v * scale),
  };
}

/** Seeded uniform values in ±scale (xorshift32), as float64. */
export function random(n: number, seed: number, scale = 1): Vec {
  const next = xorshift32(seed);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = ((next() / 4294967296) * 2 - 1) * scale;
  return out;
}

/** Central finite-difference gradient of a scalar function at x (float64). */
export function numericGradient(f: (x: Vec) => number, x: Vec, h = 1e-6): Vec {
  const g = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const xp = Float64Array.from(x);
    const xm = Float64Array.from(x);
    xp[i] += h;
    xm[i] -= h;
    g[i] = (f(xp) - f(xm)) / (2 * h);
  }
  return g;
}

/** Σ r ∘ y: a scalar whose gradient with respect to y is r, to test backward functions through. */
export function dot(y: Vec, r: Vec): number {
  let s = 0;
  for (let i = 0; i < y.length; i++) s += y[i] * r[i];
  return s;
}

// ---------------------------------------------------------------------------------------------------
// The whole model: a llama forward pass with LoRA adapters, the masked mean cross-entropy, and the
// gradient of that loss with respect to every adapter matrix, composed from the ops above.

export type RefTarget = 'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down';

export interface RefModel {
  nLayers: number;
  dim: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffn: number;
  vocab: number;
  eps: number;
  rope: { nRot: number; neox: boolean; base: number; freqScale: number };
  embedding: Vec;
  head: Vec;
  outputNorm: Vec;
  layers: { attnNorm: Vec; ffnNorm: Vec; w: Record<RefTarget, Vec> }[];
}

/** A and B (rank × in, out × rank) per adapted matrix, keyed `${layer}.${target}`. */
export interface RefLora {
  rank: number;
  scale: number;
  a: Map<string, Vec>;
  b: Map<string, Vec>;
}

export function refShape(m: RefModel, t: RefTarget): { inDim: number; outDim: number } {
  const q = m.heads * m.headDim;
  const kv = m.kvHeads * m.headDim;
  return { q: { inDim: m.dim, outDim: q }, k: { inDim: m.dim, outDim: kv }, v: { inDim: m.dim, outDim: kv }, o: { inDim: q, outDim: m.dim }, gate: { inDim: m.dim, outDim: m.ffn }, up: { inDim: m.dim, outDim: m.ffn }, down: { inDim: m.ffn, outDim: m.dim } }[t];
}

const add = (x: Vec, y: Vec): Vec => x.map((v, i) => v + y[i]);

/** Mean masked cross-entropy over all examples' counted positions, and d(loss)/dA, dB of every adapter. */
export function modelLossAndGrads(m: RefModel, lora: RefLora, examples: { tokens: ArrayLike<number>; lossMask: ArrayLike<number> }[]): { loss: number; counted: number; da: Map<string, Vec>; db: Map<string, Vec> } {
  const counted = examples.reduce((n, ex) => n + Array.from(ex.lossMask).filter((v, t) => v && t < ex.tokens.length - 1).length, 0);
  const da = new Map<string, Vec>();
  const db = new Map<string, Vec>();
  for (const [key, a] of lora.a) da.set(key, new Float64Array(a.length));
  for (const [key, b] of lora.b) db.set(key, new Float64Array(b.length));
  let lossSum = 0;
  for (const ex of examples) {
    const T = ex.tokens.length;
    const positions = Array.from({ length: T }, (_, t) => t);
    const rq = { heads: m.heads, headDim: m.headDim, ...m.rope };
    const rk = { ...rq, heads: m.kvHeads };
    const attn = { heads: m.heads, kvHeads: m.kvHeads, headDim: m.headDim, spans: positions.map((): [number, number] => [0, T]) };
    const proj = (l: number, t: RefTarget, x: Vec): Vec => {
      const { inDim, outDim } = refShape(m, t);
      const a = lora.a.get(`${l}.${t}`);
      return a ? loraLinear(x, m.layers[l].w[t], a, lora.b.get(`${l}.${t}`)!, T, inDim, outDim, lora.rank, lora.scale) : linear(x, m.layers[l].w[t], T, inDim, outDim);
    };
    const projBack = (l: number, t: RefTarget, x: Vec, dy: Vec): Vec => {
      const { inDim, outDim } = refShape(m, t);
      const key = `${l}.${t}`;
      const a = lora.a.get(key);
      if (!a) return linearBackward(x, m.layers[l].w[t], dy, T, inDim, outDim).dx;
      const g = loraLinearBackward(x, m.layers[l].w[t], a, lora.b.get(key)!, dy, T, inDim, outDim, lora.rank, lora.scale);
      da.get(key)!.set(add(da.get(key)!, g.da));
      db.get(key)!.set(add(db.get(key)!, g.db));
      return g.dx;
    };
    // Forward, keeping what backward reads.
    let x: Vec = new Float64Array(T * m.dim);
    for (let t = 0; t < T; t++) x.set(m.embedding.subarray(ex.tokens[t] * m.dim, (ex.tokens[t] + 1) * m.dim), t * m.dim);
    const saved: { x: Vec; n1: Vec; q: Vec; k: Vec; v: Vec; att: Vec; x2: Vec; n2: Vec; g: Vec; u: Vec; h: Vec }[] = [];
    for (let l = 0; l < m.nLayers; l++) {
      const L = m.layers[l];
      const n1 = rmsnorm(x, L.attnNorm, T, m.dim, m.eps).y;
      const q = rope(proj(l, 'q', n1), positions, rq);
      const k = rope(proj(l, 'k', n1), positions, rk);
      const v = proj(l, 'v', n1);
      const att = attention(q, k, v, attn).out;
      const x2 = add(x, proj(l, 'o', att));
      const n2 = rmsnorm(x2, L.ffnNorm, T, m.dim, m.eps).y;
      const g = proj(l, 'gate', n2);
      const u = proj(l, 'up', n2);
      const h = swiglu(g, u);
      saved.push({ x, n1, q, k, v, att, x2, n2, g, u, h });
      x = add(x2, proj(l, 'down', h));
    }
    const xf = rmsnorm(x, m.outputNorm, T, m.dim, m.eps).y;
    const logits = linear(xf, m.head, T, m.dim, m.vocab);
    const targets = positions.map((t) => (t < T - 1 ? ex.tokens[t + 1] : 0));
    const mask = positions.map((t) => (t < T - 1 && ex.lossMask[t] ? 1 : 0));
    const ce = crossEntropy(logits, targets, mask, m.vocab);
    lossSum += ce.loss.reduce((s, v) => s + v, 0);
    if (ce.counted === 0) continue;
    // Backward: crossEntropy's gradient is of this example's mean; rescale to the batch's.
    const dlogits = ce.dlogits.map((v) => (v * ce.counted) / counted);
    let dx: Vec = rmsnormBackward(x, m.outputNorm, linearBackward(xf, m.head, dlogits, T, m.dim, m.vocab).dx, T, m.dim, m.eps);
    for (let l = m.nLayers - 1; l >= 0; l--) {
      const s = saved[l];
      const L = m.layers[l];
      const dh = projBack(l, 'down', s.h, dx);
      const { dgate, dup } = swigluBackward(s.g, s.u, dh);
      const dn2 = add(projBack(l, 'gate', s.n2, dgate), projBack(l, 'up', s.n2, dup));
      const dx2 = add(dx, rmsnormBackward(s.x2, L.ffnNorm, dn2, T, m.dim, m.eps));
      const datt = projBack(l, 'o', s.att, dx2);
      const g = attentionBackward(s.q, s.k, s.v, datt, attn);
      const dq = rope(g.dq, positions, rq, -1);
      const dk = rope(g.dk, positions, rk, -1);
      const dn1 = add(add(projBack(l, 'q', s.n1, dq), projBack(l, 'k', s.n1, dk)), projBack(l, 'v', s.n1, g.dv));
      dx = add(dx2, rmsnormBackward(s.x, L.attnNorm, dn1, T, m.dim, m.eps));
    }
  }
  return { loss: lossSum / counted, counted, da, db };
}
