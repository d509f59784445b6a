// rmsnorm-serial.wgsl reading and writing four elements per access, for rows whose length, offsets and
// strides are multiples of 4 (RmsNormKernel picks it). On a CPU rasteriser every storage access is a
// loop over the SIMD lanes, so the count of accesses, not of bytes, sets the time: a decode step's
// 576-wide norm took 115 µs with scalar accesses, about a third of that here.

alias XT = vec4f;
override WG: u32 = 16u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= params.rows) { return; }
  let xb = x_base(row) / 4u;
  let yb = y_base(row) / 4u;
  let wb = w_base(row) / 4u;
  let n = params.dim / 4u;
  var sum = vec4f();
  for (var i = 0u; i < n; i++) {
    let v = x[xb + i];
    sum += v * v;
  }
  let scale = inverseSqrt((sum.x + sum.y + sum.z + sum.w) / f32(params.dim) + params.eps);
  for (var i = 0u; i < n; i++) { y_put(yb + i, x[xb + i] * scale * w[wb + i]); }
}
