// The contiguous-x4 layout over a weight store (binding 0, read as w_ld(i): kernels/runtime/weights.ts),
// which on llvmpipe is an rgba32uint texture: the limit the weight-product kernels stream against there.
// Params, out, fold and xor_range_x4 in stream-read-common.wgsl.

fn ld(i: u32) -> vec4u {
  return w_ld(i);
}

@compute @workgroup_size(WG)
fn weights_x4(@builtin(global_invocation_id) gid: vec3u) {
  out[gid.x] = xor_range_x4(gid.x);
}
