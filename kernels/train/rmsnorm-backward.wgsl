// Gradient of RMSNorm's input: with g = w ∘ dy, dx = rstd · g − x · rstd³ · (g · x) / n, added to dx when
// accumulating (the residual stream's gradient already there). One workgroup per row.

struct Params {
  rows: u32,
  n: u32,
  accumulate: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> rstd: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= params.rows) { return; }
  let base = row * params.n;
  var dot = 0.0;
  for (var i = li; i < params.n; i += WG) { dot += w[i] * dy[base + i] * x[base + i]; }
  workgroup_sum(li, dot);
  let r = rstd[row];
  let k = r * r * r * partial[0] / f32(params.n);
  for (var i = li; i < params.n; i += WG) {
    var v = r * w[i] * dy[base + i] - x[base + i] * k;
    if (params.accumulate != 0u) { v += dx[base + i]; }
    dx[base + i] = v;
  }
}
