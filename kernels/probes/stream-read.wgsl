// Layouts over a storage buffer `src` (Params, out and fold in stream-read-common.wgsl).
@group(0) @binding(0) var<storage, read> src: array<vec4u>;

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

// The same ranges, four loads per iteration into independent accumulators, so loads need not wait for
// the previous XOR.
@compute @workgroup_size(WG)
fn contiguous_x4(@builtin(global_invocation_id) gid: vec3u) {
  let start = min(gid.x * params.per, params.n);
  let end = min(start + params.per, params.n);
  var a0 = vec4u(0u);
  var a1 = vec4u(0u);
  var a2 = vec4u(0u);
  var a3 = vec4u(0u);
  var i = start;
  for (; i + 4u <= end; i += 4u) {
    a0 ^= src[i];
    a1 ^= src[i + 1u];
    a2 ^= src[i + 2u];
    a3 ^= src[i + 3u];
  }
  for (; i < end; i++) {
    a0 ^= src[i];
  }
  out[gid.x] = fold(a0 ^ a1 ^ a2 ^ a3);
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
