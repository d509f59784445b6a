// The serial vec4 kernels' walk over one run of positions (attention-serial-grouped.wgsl,
// attention-serial-split.wgsl; a fragment the wrapper puts where a kernel says `// walk`): given token t,
// the invocation's first query head h0 (the KV head it shares with the rest of its group) and positions
// first..last of t's sequence, it loads each query head r's slice of q into qv$r and leaves that head's
// online softmax maximum m$r and sum l$r and its value sums acc$r. A head two vec4s at a time (one load
// where the cache packs them, attention-kv-f16.wgsl), written out by the wrapper (unrollLines): a line
// per pair, each pair's lines for all query heads together (their loads are one), and the odd-head line
// only where a head has an odd number of vec4s. The same sums in the same order as one vec4 at a time,
// so every head's result is the bits of one head an invocation.
  let kh = kv_head(h0);
  let hv = params.head_dim / 4u;
  let kv_vec = params.kv_heads * hv;
  let seq = token_seq[t];
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
