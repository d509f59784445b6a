// Attention for CPU adapters (SwiftShader, llvmpipe): one invocation per (token, query head) runs the
// whole online softmax alone. No workgroup memory and no barriers, which cost tens of microseconds each
// on CPU rasterisers; invocations run side by side in SIMD lanes instead. Bindings and Params in
// attention-io.wgsl, as for attention.wgsl.

override WG: u32 = 16u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let item = gid.x + gid.y * nwg.x * WG;
  if (item >= params.tokens * params.heads) { return; }
  let t = item / params.heads;
  let h = item % params.heads;
  let kh = kv_head(h);
  let hd = params.head_dim;
  let kv_dim = params.kv_heads * hd;
  let seq = token_seq[t];
  let last = positions[t];
  let first = first_position(last);
  let qb = params.q_offset + t * params.q_stride + h * hd;

  var acc: array<f32, MAX_HEAD_DIM>;
  for (var d = 0u; d < hd; d++) { acc[d] = 0.0; }
  var m = -3.4e38;
  var l = 0.0;
  for (var p = first; p <= last; p++) {
    let base = kv_row(seq, p) * kv_dim + kh * hd;
    var s = 0.0;
    for (var d = 0u; d < hd; d++) { s += q[qb + d] * k_cache[base + d]; }
    s = s * params.scale;
    if (params.softcap > 0.0) { s = params.softcap * tanh(s / params.softcap); }
    let m_new = max(m, s);
    let rescale = exp(m - m_new);
    let w = exp(s - m_new);
    l = l * rescale + w;
    for (var d = 0u; d < hd; d++) { acc[d] = acc[d] * rescale + w * v_cache[base + d]; }
    m = m_new;
  }
  let ob = params.out_offset + t * params.out_stride + h * hd;
  for (var d = 0u; d < hd; d++) { out[ob + d] = acc[d] / l; }
}
