// RMSNorm over rows: y[r, i] = x[r, i] * inverseSqrt(mean(x[r, :]^2) + eps) * w[i].
// One workgroup per row; threads stride over the row, then reduce their partial sums in workgroup memory.

struct Params {
  rows: u32,
  dim: u32,
  eps: f32,
  // Offset (in elements) of row 0 in x and y, so a kernel can work on a slice of a larger activation buffer.
  x_offset: u32,
  y_offset: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wg.x + wg.y * 65535u;
  if (row >= params.rows) { return; }
  let xb = params.x_offset + row * params.dim;
  let yb = params.y_offset + row * params.dim;
  var sum = 0.0;
  for (var i = lid; i < params.dim; i += WG) {
    let v = x[xb + i];
    sum += v * v;
  }
  partial[lid] = sum;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) { partial[lid] += partial[lid + stride]; }
    workgroupBarrier();
  }
  let scale = inverseSqrt(partial[0] / f32(params.dim) + params.eps);
  for (var i = lid; i < params.dim; i += WG) {
    y[yb + i] = x[xb + i] * scale * w[i];
  }
}
