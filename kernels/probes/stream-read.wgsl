// Layouts over a storage buffer `src` (Params, out and fold in stream-read-common.wgsl).
@group(0) @binding(0) var<storage, read> src: array<vec4u>;

fn ld(i: u32) -> vec4u {
  return src[i];
}

// One contiguous range per invocation: a CPU rasteriser runs an invocation's loop on one core, whose
// prefetcher follows a sequential stream.
@compute @workgroup_size(WG)
fn contiguous(@builtin(global_invocation_id) gid: vec3u) {
  let start = min(gid.x * params.per, params.n);
  let end = min(start + params.per, params.n);
  var acc = vec4u(0u);
  for (var i = start; i < end; i++) {
    acc ^= src[i];
  }
  out[gid.x] = fold(acc);
}

// The same ranges, four loads per iteration (xor_range_x4, stream-read-common.wgsl).
@compute @workgroup_size(WG)
fn contiguous_x4(@builtin(global_invocation_id) gid: vec3u) {
  out[gid.x] = xor_range_x4(gid.x);
}

// Neighbouring invocations read neighbouring vec4s: the coalesced layout GPUs want.
@compute @workgroup_size(WG)
fn grid_stride(@builtin(global_invocation_id) gid: vec3u) {
  var acc = vec4u(0u);
  for (var i = gid.x; i < params.n; i += params.invocations) {
    acc ^= src[i];
  }
  out[gid.x] = fold(acc);
}
