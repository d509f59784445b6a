// Attention backward, keys and values: for (token s, KV head), over the later tokens t of its sequence and
// the query heads sharing this KV head: dK = scale · Σ dS · Q and dV = Σ P · dO, with P and dS recomputed
// from the saved log-sum-exp and D (stats). HD, V, HDV and vdot are put in front of this file by the
// wrapper, which writes out the `$d` lines (see attention-forward.wgsl); Params, q, k, v, span and the index
// helpers are in attention-io.wgsl.

@group(0) @binding(4) var<storage, read> dout: array<V>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> dk: array<V>;
@group(0) @binding(7) var<storage, read_write> dv: array<V>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = row_index(gid, nwg);
  if (idx >= params.tokens * params.kv_heads) { return; }
  let s = idx / params.kv_heads;
  let kvh = idx % params.kv_heads;
  let group = params.heads / params.kv_heads;
  var kv: array<V, HDV>;
  var vv: array<V, HDV>;
  var dkv: array<V, HDV>;
  var dvv: array<V, HDV>;
  for (var d = 0u; d < HDV; d++) {
    kv[d] = k[idx * HDV + d];
    vv[d] = v[idx * HDV + d];
    dkv[d] = V(0.0);
    dvv[d] = V(0.0);
  }
  let end = sequence_end(s);
  for (var t = s; t < end; t++) {
    for (var g = 0u; g < group; g++) {
      let qh = t * params.heads + kvh * group + g;
      let qb = qh * HDV;
      var score = 0.0;
      var dp = 0.0;
      score += vdot(q[qb + $du], kv[$du]);
      dp += vdot(dout[qb + $du], vv[$du]);
      let p = exp(score * params.scale - stats[2u * qh]);
      let ds = p * (dp - stats[2u * qh + 1u]) * params.scale;
      dkv[$du] += ds * q[qb + $du];
      dvv[$du] += p * dout[qb + $du];
    }
  }
  for (var d = 0u; d < HDV; d++) {
    dk[idx * HDV + d] = dkv[d];
    dv[idx * HDV + d] = dvv[d];
  }
}
