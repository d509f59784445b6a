import { xorshift32 } from '../../kernels/probes/xorshift.ts';
/** Seeded random inputs for kernel tests, so a failure reproduces. */
export function rng(seed: number): () => number {
  const next = xorshift32(seed);
  return () => next() / 4294967296;
}

export function randomF32(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (r() * 2 - 1) * scale;
  return out;
}

/** Largest |a-b| relative to max(1, |b|); test tolerances are stated in these units. */
export function maxRelError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i] - b[i]) / Math.max(1, Math.abs(b[i]));
    if (!(e <= worst)) worst = Number.isNaN(e) ? Infinity : Math.max(worst, e);
  }
  return worst;
}
