// attention-serial.wgsl reading four dimensions per load, for head dimensions, offsets and strides that
// are multiples of 4 (AttentionKernel picks it): on a CPU rasteriser every storage load is a loop over
// the SIMD lanes, so the scalar kernel's three loads per dimension and position (q, k, v) set its speed.
// Here q is loaded once into the invocation's own array and each position costs hd/4 loads of k and of
// v. One invocation per (token, query head), no workgroup memory, no barriers.

// WG, POS_CHUNK, HV and MAX_HEAD_VEC come with attention-io-vec4.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let item = gid.x + gid.y * nwg.x * WG;
  if (item >= params.tokens * params.heads) { return; }
  let t = item / params.heads;
  let h = item % params.heads;
  let kh = h / (params.heads / params.kv_heads);
  let hv = params.head_dim / 4u;
  let kv_vec = params.kv_heads * hv;
  let seq = token_seq[t];
  let last = positions[t];
  let first = first_position(last);
  let qb = (params.q_offset + t * params.q_stride) / 4u + h * hv;

  var qv: array<vec4f, MAX_HEAD_VEC>;
  var acc: array<vec4f, MAX_HEAD_VEC>;
  for (var d = 0u; d < HV; d++) {
    qv[d] = q[qb + d];
    acc[d] = vec4f();
  }
  var m = -3.4e38;
  var l = 0.0;
  for (var c = first; c <= last; c += POS_CHUNK) {
  let chunk_end = min(last, c + (POS_CHUNK - 1u));
  for (var p = c; p <= chunk_end; p++) {
    let page = page_table[seq * params.max_pages + p / params.page_size];
    let base = (page * params.page_size + p % params.page_size) * kv_vec + kh * hv;
    var s4 = vec4f();
    for (var d = 0u; d < HV; d++) { s4 += qv[d] * k_cache[base + d]; }
    var s = (s4.x + s4.y + s4.z + s4.w) * params.scale;
    if (params.softcap > 0.0) { s = params.softcap * tanh(s / params.softcap); }
    let m_new = max(m, s);
    let rescale = exp(m - m_new);
    let w = exp(s - m_new);
    l = l * rescale + w;
    for (var d = 0u; d < HV; d++) { acc[d] = acc[d] * rescale + w * v_cache[base + d]; }
    m = m_new;
  }
  if (chunk_end == last) { break; }
  }
  store_head(t, h, &acc, l);
}
