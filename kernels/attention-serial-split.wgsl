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
// head where the group is 1); the walk over its run of positions is attention-serial-walk.wgsl.

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
  let t$t = t;
  let seq = token_seq[t];
  let token_last = positions[t];
  let token_first = first_position(token_last);
  // Runs of ceil(span / splits) positions: the first split always has some, a later one may have none.
  let run = (token_last - token_first + splits) / splits;
  let first = token_first + split * run;
  let last = min(token_last, first + run - 1u);
  // walk
  let pb$r = ((t * params.heads + h0 + $ru) * splits + split) * (HV + 1u);
  for (var d = 0u; d < HV; d++) { partials[pb$r + d] = acc$r_$t[d]; }
  partials[pb$r + HV] = vec4f(m$r_$t, l$r_$t, 0.0, 0.0);
  if (atomicAdd(&split_count[pair], 1u) != splits - 1u) { return; }
  atomicStore(&split_count[pair], 0u);
  merge_head(t, h0 + $ru, splits);
}
