// The contiguous-x4 layout over a weight store (binding 0, read as w_ld(i): kernels/runtime/weights.ts),
// which on llvmpipe is an rgba32uint texture: the limit the weight-product kernels stream against there.
// Params, out and fold in stream-read-common.wgsl.

@compute @workgroup_size(WG)
fn weights_x4(@builtin(global_invocation_id) gid: vec3u) {
  let start = min(gid.x * params.per, params.n);
  let end = min(start + params.per, params.n);
  var a0 = vec4u(0u);
  var a1 = vec4u(0u);
  var a2 = vec4u(0u);
  var a3 = vec4u(0u);
  var i = start;
  for (; i + 4u <= end; i += 4u) {
    a0 ^= w_ld(i);
    a1 ^= w_ld(i + 1u);
    a2 ^= w_ld(i + 2u);
    a3 ^= w_ld(i + 3u);
  }
  for (; i < end; i++) {
    a0 ^= w_ld(i);
  }
  out[gid.x] = fold(a0 ^ a1 ^ a2 ^ a3);
}
