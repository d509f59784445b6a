// attention-serial-grouped.wgsl with each (token, query-head group) pair's positions split over
// params.splits invocations: flash-decoding for CPU rasterisers. A decode step has few pairs (SmolLM2's
// 9 heads: 9 invocations, one SIMD instruction's lanes on one of the threads), and each walked every
// position alone, so at long spans attention was a third of the step with most lanes idle. Split, each
// invocation walks one contiguous run of positions and writes its unnormalised sums and softmax maximum
// and sum (as attention-parallel-partial.wgsl lays them out); the invocation that brings its pair's
// counter to the split count merges them all (attention-combine.wgsl's reduction) and stores the heads,
// so no combine dispatch is needed. The counter's add must order the partial sums' stores before it:
// llvmpipe compiles atomics as sequentially consistent read-modify-writes (GpuCaps.orderedAtomics; the
// decode products' tails rely on the same, matvec-tail.wgsl).
//
// Template: a line containing `$r` is written once per query head of the group (kernels/unroll.ts; one
// head where the group is 1), a line containing `$p` once per vec4 pair of a head, `$q` for an odd one.

// WG, HV and MAX_HEAD_VEC come with attention-io-vec4.wgsl, store_head with the output's file.

@group(0) @binding(7) var<storage, read_write> partials: array<vec4f>;
@group(0) @binding(8) var<storage, read_write> split_count: array<atomic<u32>>;

// Head h of token t from its splits' partial sums: sum_s a_s exp(m_s - M) / sum_s l_s exp(m_s - M), M the
// largest maximum; a split with no positions (maximum -3.4e38, sum 0) weighs nothing.
fn merge_head(t: u32, h: u32, splits: u32) {
  let base = (t * params.heads + h) * splits * (HV + 1u);
  var top = -3.4e38;
  for (var s = 0u; s < splits; s++) { top = max(top, partials[base + s * (HV + 1u) + HV].x); }
  var acc: array<vec4f, MAX_HEAD_VEC>;
  for (var d = 0u; d < HV; d++) { acc[d] = vec4f(); }
  var l = 0.0;
  for (var s = 0u; s < splits; s++) {
    let sb = base + s * (HV + 1u);
    let ml = partials[sb + HV];
    let w = exp(ml.x - top);
    l += ml.y * w;
    for (var d = 0u; d < HV; d++) { acc[d] += partials[sb + d] * w; }
  }
  store_head(t, h, &acc, l);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let item = gid.x + gid.y * nwg.x * WG;
  let per_token = params.heads / $ROWSu;
  let splits = params.splits;
  if (item >= params.tokens * per_token * splits) { return; }
  // Split s of every pair, then split s + 1: the pairs' last splits share the last SIMD instructions,
  // whose lanes then merge their pairs side by side instead of one after another.
  let pairs = params.tokens * per_token;
  let pair = item % pairs;
  let split = item / pairs;
  let t = pair / per_token;
  let h0 = (pair % per_token) * $ROWSu;
  let kh = kv_head(h0);
  let hv = params.head_dim / 4u;
  let kv_vec = params.kv_heads * hv;
  let seq = token_seq[t];
  let token_last = positions[t];
  let token_first = first_position(token_last);
  // Runs of ceil(span / splits) positions: the first split always has some, a later one may have none.
  let run = (token_last - token_first + splits) / splits;
  let first = token_first + split * run;
  let last = min(token_last, first + run - 1u);
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
  let pb$r = ((t * params.heads + h0 + $ru) * splits + split) * (HV + 1u);
  for (var d = 0u; d < HV; d++) { partials[pb$r + d] = acc$r[d]; }
  partials[pb$r + HV] = vec4f(m$r, l$r, 0.0, 0.0);
  if (atomicAdd(&split_count[pair], 1u) != splits - 1u) { return; }
  atomicStore(&split_count[pair], 0u);
  merge_head(t, h0 + $ru, splits);
}
