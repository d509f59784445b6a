// RMSNorm over rows: y[r, i] = x[r, i] * inverseSqrt(mean(x[r, :]^2) + eps) * w[i].
// One workgroup per row; threads stride over the row, then reduce their partial sums in workgroup memory.
// Joined with rmsnorm-rows.wgsl (Params, addressing) and rmsnorm-io.wgsl or rmsnorm-io-inplace.wgsl.

alias XT = f32;
override WG: u32 = 64u;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let row = wg.x + wg.y * 65535u;
  if (row >= params.rows) { return; }
  let xb = x_base(row);
  let yb = y_base(row);
  let wb = w_base(row);
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
    y_put(yb + i, x[xb + i] * scale * w[wb + i]);
  }
}
