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
  let kh = kv_head(h);
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
  for (var p = first; p <= last; p++) {
    let base = kv_row(seq, p) * kv_vec + kh * hv;
    var s4 = vec4f();
    // A head two vec4s at a time (one load where the cache packs them, attention-kv-f16.wgsl), written
    // out by the wrapper (unrollLines): a line per pair, and the odd-head line only where a head has an
    // odd number of vec4s. The same sums in the same order as one vec4 at a time.
    { let k = k_pair(base, 2u * $pu); s4 += qv[2u * $pu] * k[0]; s4 += qv[2u * $pu + 1u] * k[1]; }
    s4 += qv[HV - 1u] * k_one(base, HV - 1u); // odd head ($q)
    var s = (s4.x + s4.y + s4.z + s4.w) * params.scale;
    if (params.softcap > 0.0) { s = params.softcap * tanh(s / params.softcap); }
    let m_new = max(m, s);
    let rescale = exp(m - m_new);
    let w = exp(s - m_new);
    l = l * rescale + w;
    { let v = v_pair(base, 2u * $pu); acc[2u * $pu] = acc[2u * $pu] * rescale + w * v[0]; acc[2u * $pu + 1u] = acc[2u * $pu + 1u] * rescale + w * v[1]; }
    acc[HV - 1u] = acc[HV - 1u] * rescale + w * v_one(base, HV - 1u); // odd head ($q)
    m = m_new;
  }
  store_head(t, h, &acc, l);
}
