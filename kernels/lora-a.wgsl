// LoRA's first low-rank product, per token row with that row's own adapter: t[tok, m, r] = A_m · x[tok]
// for each member m of a group of targets reading the same x (q|k|v, gate|up, o, down).
// One workgroup per (token, member, r) reduces one row of A against x. The directory entry (offsets of
// A and B in the weight pool, rank, scale) is read once per workgroup and made uniform, so workgroups
// past the entry's rank (or rows with no adapter, rank 0) leave before the barriers.

var<workgroup> entry: vec4u;
var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let idx = wg.x + wg.y * 65535u;
  let per_token = params.members * params.max_rank;
  let tok = idx / per_token;
  if (tok >= params.tokens) { return; }
  let m = (idx % per_token) / params.max_rank;
  let r = idx % params.max_rank;
  if (lid == 0u) {
    let adapter = row_adapter[tok];
    var e = vec4u(0u);
    if (adapter != NO_ADAPTER) {
      e = directory[(adapter * params.layers + params.layer) * params.targets_per_layer + params.targets[m]];
    }
    entry = e;
  }
  let e = workgroupUniformLoad(&entry);
  if (r >= e.z) { return; }
  let x_base = params.x_offset + tok * params.x_stride;
  let a_base = e.x + r * params.in_dim;
  var acc = 0.0;
  for (var i = lid; i < params.in_dim; i += WG) {
    acc += pool[a_base + i] * x[x_base + i];
  }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { partial[lid] += partial[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) { t[tok * params.t_stride + m * params.max_rank + r] = partial[0]; }
}
