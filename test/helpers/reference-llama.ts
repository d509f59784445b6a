/**
 * A plain float64 llama forward pass over Hugging Face weights (unpermuted Q/K, rotate-half RoPE), used
 * as an independent float reference for the engine's logits. Slow and simple on purpose.
 */
import { readSafetensors } from './safetensors.ts';

export interface HfLlamaConfig {
  hidden_size: number;
  intermediate_size: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  num_hidden_layers: number;
  rms_norm_eps: number;
  rope_theta: number;
  vocab_size: number;
}

export function referenceLogits(safetensorsPath: string, cfg: HfLlamaConfig, tokens: number[]): Float32Array[] {
  const w = readSafetensors(safetensorsPath);
  const get = (n: string) => {
    const t = w.get(n);
    if (!t) throw new Error(`missing ${n}`);
    return t.data;
  };
  const D = cfg.hidden_size;
  const H = cfg.num_attention_heads;
  const KV = cfg.num_key_value_heads;
  const hd = D / H;
  const F = cfg.intermediate_size;
  const matvec = (m: Float32Array, x: Float64Array, rows: number, cols: number) => {
    const y = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let s = 0;
      for (let c = 0; c < cols; c++) s += m[r * cols + c] * x[c];
      y[r] = s;
    }
    return y;
  };
  const rms = (x: Float64Array, g: Float32Array) => {
    let ss = 0;
    for (const v of x) ss += v * v;
    const s = 1 / Math.sqrt(ss / x.length + cfg.rms_norm_eps);
    return x.map((v, i) => v * s * g[i]);
  };
  const rope = (v: Float64Array, heads: number, pos: number) => {
    for (let h = 0; h < heads; h++)
      for (let i = 0; i < hd / 2; i++) {
        const th = pos * Math.pow(cfg.rope_theta, (-2 * i) / hd);
        const a = h * hd + i;
        const b = a + hd / 2;
        const [x0, x1] = [v[a], v[b]];
        v[a] = x0 * Math.cos(th) - x1 * Math.sin(th);
        v[b] = x0 * Math.sin(th) + x1 * Math.cos(th);
      }
  };
  const emb = get('model.embed_tokens.weight');
  const head = w.get('lm_head.weight')?.data ?? emb;
  const keys: Float64Array[][] = Array.from({ length: cfg.num_hidden_layers }, () => []);
  const vals: Float64Array[][] = Array.from({ length: cfg.num_hidden_layers }, () => []);
  const out: Float32Array[] = [];
  tokens.forEach((tok, pos) => {
    let x = Float64Array.from(emb.subarray(tok * D, (tok + 1) * D));
    for (let l = 0; l < cfg.num_hidden_layers; l++) {
      const p = `model.layers.${l}.`;
      const xn = rms(x, get(p + 'input_layernorm.weight'));
      const q = matvec(get(p + 'self_attn.q_proj.weight'), xn, D, D);
      const k = matvec(get(p + 'self_attn.k_proj.weight'), xn, KV * hd, D);
      const v = matvec(get(p + 'self_attn.v_proj.weight'), xn, KV * hd, D);
      rope(q, H, pos);
      rope(k, KV, pos);
      keys[l].push(k);
      vals[l].push(v);
      const att = new Float64Array(D);
      for (let h = 0; h < H; h++) {
        const kh = Math.floor(h / (H / KV));
        const scores = keys[l].map((kk) => {
          let s = 0;
          for (let i = 0; i < hd; i++) s += q[h * hd + i] * kk[kh * hd + i];
          return s / Math.sqrt(hd);
        });
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let i = 0; i < hd; i++) {
          let acc = 0;
          e.forEach((wt, j) => (acc += wt * vals[l][j][kh * hd + i]));
          att[h * hd + i] = acc / z;
        }
      }
      const o = matvec(get(p + 'self_attn.o_proj.weight'), att, D, D);
      x = x.map((v2, i) => v2 + o[i]);
      const xn2 = rms(x, get(p + 'post_attention_layernorm.weight'));
      const g = matvec(get(p + 'mlp.gate_proj.weight'), xn2, F, D);
      const u = matvec(get(p + 'mlp.up_proj.weight'), xn2, F, D);
      const act = g.map((gv, i) => (gv / (1 + Math.exp(-gv))) * u[i]);
      const d = matvec(get(p + 'mlp.down_proj.weight'), act, D, F);
      x = x.map((v2, i) => v2 + d[i]);
    }
    const xf = rms(x, get('model.norm.weight'));
    out.push(Float32Array.from(matvec(head, xf, cfg.vocab_size, D)));
  });
  return out;
}
