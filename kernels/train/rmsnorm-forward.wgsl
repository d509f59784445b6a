// RMSNorm of each row for training: y = x · rstd · w with rstd = 1 / sqrt(mean(x²) + eps), keeping rstd
// per row for the backward pass. One workgroup per row.

struct Params {
  rows: u32,
  n: u32,
  eps: f32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> rstd: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= params.rows) { return; }
  let base = row * params.n;
  var ss = 0.0;
  for (var i = li; i < params.n; i += WG) { ss += x[base + i] * x[base + i]; }
  workgroup_sum(li, ss);
  let r = 1.0 / sqrt(partial[0] / f32(params.n) + params.eps);
  for (var i = li; i < params.n; i += WG) { y[base + i] = x[base + i] * r * w[i]; }
  if (li == 0u) { rstd[row] = r; }
}
