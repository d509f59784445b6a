/** Causal GQA attention of one token's query heads over keys and values 0..n-1 (the last `window` of them when set), in f64. */
export function attentionRef(q: Float32Array, keys: Float32Array[], values: Float32Array[], heads: number, kvHeads: number, hd: number, scale: number, window = 0): Float32Array {
  const out = new Float32Array(heads * hd);
  const group = heads / kvHeads;
  const first = window > 0 ? Math.max(0, keys.length - window) : 0;
  for (let h = 0; h < heads; h++) {
    const kh = Math.floor(h / group);
    const scores: number[] = [];
    for (let p = first; p < keys.length; p++) {
      let d = 0;
      for (let i = 0; i < hd; i++) d += q[h * hd + i] * keys[p][kh * hd + i];
      scores.push(d * scale);
    }
    const m = Math.max(...scores);
    const w = scores.map((s) => Math.exp(s - m));
    const sum = w.reduce((a, b) => a + b, 0);
    for (let i = 0; i < hd; i++) {
      let acc = 0;
      for (let j = 0; j < w.length; j++) acc += w[j] * values[first + j][kh * hd + i];
      out[h * hd + i] = acc / sum;
    }
  }
  return out;
}
