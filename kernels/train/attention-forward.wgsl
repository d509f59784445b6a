// Causal grouped-query attention over whole sequences packed one after another, for training. One
// invocation per (token, head) runs an online softmax over its sequence's keys up to itself and keeps the
// log-sum-exp of the scores (stats[2i]) so the backward pass recomputes probabilities instead of storing
// T² of them. HD (the head size), V (vec4f when HD is a multiple of 4, else f32: one load per 4 values
// where it can), HDV = HD / width and vdot are put in front of this file by the wrapper: private arrays
// need a constant length.
// span[2t], span[2t+1]: the first token of t's sequence and one past its last.

struct Params {
  tokens: u32,
  heads: u32,
  kv_heads: u32,
  scale: f32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> q: array<V>;
@group(0) @binding(1) var<storage, read> k: array<V>;
@group(0) @binding(2) var<storage, read> v: array<V>;
@group(0) @binding(3) var<storage, read> span: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<V>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * params.heads) { return; }
  let t = idx / params.heads;
  let h = idx % params.heads;
  let kvh = h / (params.heads / params.kv_heads);
  var qv: array<V, HDV>;
  var acc: array<V, HDV>;
  for (var d = 0u; d < HDV; d++) { qv[d] = q[idx * HDV + d]; acc[d] = V(0.0); }
  var m = -3.0e38;
  var l = 0.0;
  for (var s = span[2u * t]; s <= t; s++) {
    let kb = (s * params.kv_heads + kvh) * HDV;
    var score = 0.0;
    for (var d = 0u; d < HDV; d++) { score += vdot(qv[d], k[kb + d]); }
    score *= params.scale;
    let m_new = max(m, score);
    let corr = exp(m - m_new);
    let p = exp(score - m_new);
    l = l * corr + p;
    for (var d = 0u; d < HDV; d++) { acc[d] = acc[d] * corr + p * v[kb + d]; }
    m = m_new;
  }
  for (var d = 0u; d < HDV; d++) { out[idx * HDV + d] = acc[d] / l; }
  stats[2u * idx] = m + log(l);
}
