// attention-serial-grouped.wgsl for two tokens an invocation: tokens 2i and 2i + 1 of the step and the
// $ROWS query heads that share a KV head, so each key and value vec4 loaded is used by twice the heads.
// On a CPU rasteriser loads are most of this kernel's time (each is a loop over the SIMD lanes), and a
// long step's tokens mostly walk the same positions of the same sequence: the invocation walks the
// union of its tokens' runs once, a position counting for a token only within its own run (on$t in the
// walk). Where the two tokens belong to different sequences (a step's boundary between two prompts) it
// walks each sequence in turn. The last token of an odd step is taken twice (both store the same bits).
// Each (token, head)'s sums are those of one token an invocation in the same order, so its result is the
// same bits as the grouped kernel's.
//
// Template: a line containing `$r` is written once per query head of the group, `$t` once per token (0,
// 1), both once per pair (kernels/unroll.ts); the walk is attention-serial-walk.wgsl in its two parts.

// WG, HV and MAX_HEAD_VEC come with attention-io-vec4.wgsl.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let item = gid.x + gid.y * nwg.x * WG;
  let per_token = params.heads / $ROWSu;
  if (item >= ((params.tokens + 1u) / 2u) * per_token) { return; }
  let t = (item / per_token) * 2u;
  let t$t = min(t + $tu, params.tokens - 1u);
  let h0 = (item % per_token) * $ROWSu;
  let seq$t = token_seq[t$t];
  let last$t = positions[t$t];
  let first$t = first_position(last$t);
  // walk: queries
  let passes = select(2u, 1u, seq0 == seq1);
  for (var walk = 0u; walk < passes; walk++) {
    // One sequence: the union of both runs; two: each token's own run in turn.
    let seq = select(seq0, seq1, walk == 1u);
    let first = select(min(first0, first1), select(first0, first1, walk == 1u), passes == 2u);
    let last = select(max(last0, last1), select(last0, last1, walk == 1u), passes == 2u);
    // walk: positions
  }
  store_head(t$t, h0 + $ru, &acc$r_$t, l$r_$t);
}
