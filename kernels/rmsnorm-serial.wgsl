// RMSNorm for CPU adapters: one invocation per row, no workgroup memory or barriers (see
// attention-serial.wgsl for why). Same bindings and Params as rmsnorm.wgsl.

alias XT = f32;
override WG: u32 = 16u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= params.rows) { return; }
  let xb = x_base(row);
  let yb = y_base(row);
  let wb = w_base(row);
  var sum = 0.0;
  for (var i = 0u; i < params.dim; i++) {
    let v = x[xb + i];
    sum += v * v;
  }
  let scale = inverseSqrt(sum / f32(params.dim) + params.eps);
  for (var i = 0u; i < params.dim; i++) { y_put(yb + i, x[xb + i] * scale * w[wb + i]); }
}
