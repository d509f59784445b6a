// The serial vec4 kernels' walk over positions (attention-serial-grouped.wgsl, attention-serial-pair.wgsl,
// attention-serial-split.wgsl; fragments the wrapper puts where a kernel says `// walk` for the whole walk,
// or `// walk: queries` and `// walk: positions` for its two parts): given the invocation's tokens t$t,
// its first query head h0 (the KV head it shares with the rest of its group), it loads each query head
// r's slice of token t$t's q into qv$r_$t, then walks positions first..last of sequence `seq` (the
// kernel's), leaving each (head, token)'s online softmax maximum m$r_$t and sum l$r_$t and its value sums
// acc$r_$t. Where an invocation takes two tokens (the pair kernel), a position counts for a token only
// where on$t says so (its own sequence and positions); elsewhere on$t is the constant true and the
// selects fold away. A head two vec4s at a time (one load where the cache packs them,
// attention-kv-f16.wgsl), written out by the wrapper (unrollLines): a line per pair, each pair's lines
// for all query heads and tokens together (their loads are one), and the odd-head line only where a
// head has an odd number of vec4s. The same sums in the same order as one head and token at a time, so
// every head's result is the bits of one head an invocation.
// walk: queries
  let kh = kv_head(h0);
  let hv = params.head_dim / 4u;
  let kv_vec = params.kv_heads * hv;
  let qb$t = (params.q_offset + t$t * params.q_stride) / 4u + h0 * hv;

  var qv$r_$t: array<vec4f, MAX_HEAD_VEC>;
  var acc$r_$t: array<vec4f, MAX_HEAD_VEC>;
  for (var d = 0u; d < HV; d++) {
    qv$r_$t[d] = q[qb$t + $ru * hv + d];
    acc$r_$t[d] = vec4f();
  }
  var m$r_$t = -3.4e38;
  var l$r_$t = 0.0;
// walk: positions
  for (var p = first; p <= last; p++) {
    let base = kv_row(seq, p) * kv_vec + kh * hv;
    let on$t = true; // one token ($s)
    let on$t = seq$t == seq && p >= first$t && p <= last$t; // two tokens ($m)
    var s4$r_$t = vec4f();
    { let k = k_pair(base, 2u * $pu); s4$r_$t += qv$r_$t[2u * $pu] * k[0]; s4$r_$t += qv$r_$t[2u * $pu + 1u] * k[1]; }
    s4$r_$t += qv$r_$t[HV - 1u] * k_one(base, HV - 1u); // odd head ($q)
    var s$r_$t = (s4$r_$t.x + s4$r_$t.y + s4$r_$t.z + s4$r_$t.w) * params.scale;
    if (params.softcap > 0.0) {
      s$r_$t = params.softcap * tanh(s$r_$t / params.softcap);
    }
    let m_new$r_$t = select(m$r_$t, max(m$r_$t, s$r_$t), on$t);
    let rescale$r_$t = select(1.0, exp(m$r_$t - m_new$r_$t), on$t);
    let w$r_$t = select(0.0, exp(s$r_$t - m_new$r_$t), on$t);
    l$r_$t = l$r_$t * rescale$r_$t + w$r_$t;
    { let v = v_pair(base, 2u * $pu); acc$r_$t[2u * $pu] = acc$r_$t[2u * $pu] * rescale$r_$t + w$r_$t * v[0]; acc$r_$t[2u * $pu + 1u] = acc$r_$t[2u * $pu + 1u] * rescale$r_$t + w$r_$t * v[1]; }
    acc$r_$t[HV - 1u] = acc$r_$t[HV - 1u] * rescale$r_$t + w$r_$t * v_one(base, HV - 1u); // odd head ($q)
    m$r_$t = m_new$r_$t;
  }
