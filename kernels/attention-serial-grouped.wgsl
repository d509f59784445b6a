// Attention for CPU rasterisers over heads of whole vec4s (AttentionKernel picks it for head dimensions,
// offsets and strides that are multiples of 4): one invocation per token and $ROWS query heads that
// share a KV head (all of them, an equal part where keeping them all would take too many registers, or
// one: the per-head kernel, for decode steps whose few items must spread over the threads), so each key
// and value vec4 is loaded once for those heads instead of once per query head. No workgroup memory, no
// barriers; q is loaded once into the invocation's own arrays. On a CPU rasteriser every storage load
// inside a loop is a loop over the SIMD lanes with a branch per lane (Mesa llvmpipe), and loads are most
// of this kernel's time; each query head's math is the same whatever the group, so its result is the
// same bits.
//
// Template: a line containing `$r` is written once per query head of the group, `$t` once (its one
// token; kernels/unroll.ts); the walk over the token's positions is attention-serial-walk.wgsl.

// WG, HV and MAX_HEAD_VEC come with attention-io-vec4.wgsl, the walk (and q's load) with attention-serial-walk.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let item = gid.x + gid.y * nwg.x * WG;
  let per_token = params.heads / $ROWSu;
  if (item >= params.tokens * per_token) { return; }
  let t = item / per_token;
  // The invocation's first query head, and the KV head it shares with the rest of its group.
  let h0 = (item % per_token) * $ROWSu;
  let t$t = t;
  let seq = token_seq[t];
  let last = positions[t];
  let first = first_position(last);
  // walk
  store_head(t, h0 + $ru, &acc$r_$t, l$r_$t);
}
