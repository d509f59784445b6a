// Attention backward, queries: for (token t, head h), with P recomputed from the saved log-sum-exp,
// D = dO · O (kept in stats[2i+1] for the key/value pass), dS = P ∘ (dO · Vᵀ − D) and dQ = scale · dS · K.
// HD, V, HDV and vdot are put in front of this file by the wrapper, which writes out the `$d` lines (see
// attention-forward.wgsl); Params, q, k, v, span and the index helpers are in attention-io.wgsl.

@group(0) @binding(4) var<storage, read> o: array<V>;
@group(0) @binding(5) var<storage, read> dout: array<V>;
@group(0) @binding(6) var<storage, read_write> stats: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<V>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = row_index(gid, nwg);
  if (idx >= params.tokens * params.heads) { return; }
  let t = idx / params.heads;
  let h = idx % params.heads;
  let kvh = kv_head(h);
  var qv: array<V, HDV>;
  var dov: array<V, HDV>;
  var acc: array<V, HDV>;
  var dsum = 0.0;
  for (var d = 0u; d < HDV; d++) {
    qv[d] = q[idx * HDV + d];
    dov[d] = dout[idx * HDV + d];
    dsum += vdot(dov[d], o[idx * HDV + d]);
    acc[d] = V(0.0);
  }
  stats[2u * idx + 1u] = dsum;
  let lse = stats[2u * idx];
  for (var s = sequence_start(t); s <= t; s++) {
    let kb = (s * params.kv_heads + kvh) * HDV;
    var score = 0.0;
    var dp = 0.0;
    score += vdot(qv[$du], k[kb + $du]);
    dp += vdot(dov[$du], v[kb + $du]);
    let p = exp(score * params.scale - lse);
    let ds = p * (dp - dsum) * params.scale;
    acc[$du] += ds * k[kb + $du];
  }
  for (var d = 0u; d < HDV; d++) { dq[idx * HDV + d] = acc[d]; }
}
