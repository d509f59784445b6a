// RMSNorm for CPU adapters: one invocation per row, no workgroup memory or barriers (see
// attention-serial.wgsl for why). Same bindings and Params as rmsnorm.wgsl.

struct Params {
  rows: u32,
  dim: u32,
  eps: f32,
  x_offset: u32,
  y_offset: u32,
}

override WG: u32 = 16u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= params.rows) { return; }
  let xb = params.x_offset + row * params.dim;
  let yb = params.y_offset + row * params.dim;
  var sum = 0.0;
  for (var i = 0u; i < params.dim; i++) {
    let v = x[xb + i];
    sum += v * v;
  }
  let scale = inverseSqrt(sum / f32(params.dim) + params.eps);
  for (var i = 0u; i < params.dim; i++) { y[yb + i] = x[xb + i] * scale * w[i]; }
}
