// attention-serial-vec4.wgsl for grouped-query attention: one invocation computes $ROWS query heads that
// share a KV head (all of them, or an equal part where keeping them all would take too many registers),
// so each key and value vec4 is loaded once for those heads instead of once per query head. On a CPU rasteriser every storage load inside a loop is a loop
// over the SIMD lanes with a branch per lane (Mesa llvmpipe), and loads are most of this kernel's time;
// the query heads' own math is unchanged, so each head's result is bit-identical to the per-head kernel.
// AttentionKernel picks it where there are enough (token, KV head) items to keep every thread busy.
//
// Template: a line containing `$r` is written once per query head of the group (kernels/unroll.ts).

// WG, POS_CHUNK, HV and MAX_HEAD_VEC come with attention-io-vec4.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let item = gid.x + gid.y * nwg.x * WG;
  let per_token = params.heads / $ROWSu;
  if (item >= params.tokens * per_token) { return; }
  let t = item / per_token;
  // The invocation's first query head, and the KV head it shares with the rest of its group.
  let h0 = (item % per_token) * $ROWSu;
  let kh = kv_head(h0);
  let hv = params.head_dim / 4u;
  let kv_vec = params.kv_heads * hv;
  let seq = token_seq[t];
  let last = positions[t];
  let first = first_position(last);
  // Query head h0 + r reads and writes its own slice.
  let qb = (params.q_offset + t * params.q_stride) / 4u + h0 * hv;

  var qv$r: array<vec4f, MAX_HEAD_VEC>;
  var acc$r: array<vec4f, MAX_HEAD_VEC>;
  for (var d = 0u; d < HV; d++) {
    qv$r[d] = q[qb + $ru * hv + d];
    acc$r[d] = vec4f();
  }
  var m$r = -3.4e38;
  var l$r = 0.0;
  for (var p = first; p <= last; p++) {
    let base = kv_row(seq, p) * kv_vec + kh * hv;
    var s4$r = vec4f();
    // A head two vec4s at a time (one load where the cache packs them, attention-kv-f16.wgsl), written
    // out by the wrapper (unrollLines): a line per pair, each pair's lines for all query heads together
    // (their loads are one), and the odd-head line only where a head has an odd number of vec4s. The same
    // sums in the same order as one vec4 at a time.
    { let k = k_pair(base, 2u * $pu); s4$r += qv$r[2u * $pu] * k[0]; s4$r += qv$r[2u * $pu + 1u] * k[1]; }
    s4$r += qv$r[HV - 1u] * k_one(base, HV - 1u); // odd head ($q)
    var s$r = (s4$r.x + s4$r.y + s4$r.z + s4$r.w) * params.scale;
    if (params.softcap > 0.0) {
      s$r = params.softcap * tanh(s$r / params.softcap);
    }
    let m_new$r = max(m$r, s$r);
    let rescale$r = exp(m$r - m_new$r);
    let w$r = exp(s$r - m_new$r);
    l$r = l$r * rescale$r + w$r;
    { let v = v_pair(base, 2u * $pu); acc$r[2u * $pu] = acc$r[2u * $pu] * rescale$r + w$r * v[0]; acc$r[2u * $pu + 1u] = acc$r[2u * $pu + 1u] * rescale$r + w$r * v[1]; }
    acc$r[HV - 1u] = acc$r[HV - 1u] * rescale$r + w$r * v_one(base, HV - 1u); // odd head ($q)
    m$r = m_new$r;
  }
  store_head(t, h0 + $ru, &acc$r, l$r);
}
