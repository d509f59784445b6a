// Attention backward, queries: for (token t, head h), with P recomputed from the saved log-sum-exp,
// D = dO · O (kept in stats[2i+1] for the key/value pass), dS = P ∘ (dO · Vᵀ − D) and dQ = scale · dS · K.
// HD is put in front of this file by the wrapper (see attention-forward.wgsl).

struct Params {
  tokens: u32,
  heads: u32,
  kv_heads: u32,
  scale: f32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> o: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> span: array<u32>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * params.heads) { return; }
  let t = idx / params.heads;
  let h = idx % params.heads;
  let kvh = h / (params.heads / params.kv_heads);
  var qv: array<f32, HD>;
  var dov: array<f32, HD>;
  var acc: array<f32, HD>;
  var dsum = 0.0;
  for (var d = 0u; d < HD; d++) {
    qv[d] = q[idx * HD + d];
    dov[d] = dout[idx * HD + d];
    dsum += dov[d] * o[idx * HD + d];
    acc[d] = 0.0;
  }
  stats[2u * idx + 1u] = dsum;
  let lse = stats[2u * idx];
  for (var s = span[2u * t]; s <= t; s++) {
    let kb = (s * params.kv_heads + kvh) * HD;
    var score = 0.0;
    var dp = 0.0;
    for (var d = 0u; d < HD; d++) {
      score += qv[d] * k[kb + d];
      dp += dov[d] * v[kb + d];
    }
    let p = exp(score * params.scale - lse);
    let ds = p * (dp - dsum) * params.scale;
    for (var d = 0u; d < HD; d++) { acc[d] += ds * k[kb + d]; }
  }
  for (var d = 0u; d < HD; d++) { dq[idx * HD + d] = acc[d]; }
}
