// LoRA's first low-rank product, per token row with that row's own adapter: t[tok, m, r] = A_m · x[tok]
// for each member m of a group of targets reading the same x (q|k|v, gate|up, o, down).
// One workgroup per (token, member, r) reduces one row of A against x. The directory entry (offsets of
// A and B in the weight pool, rank, scale) is read once per workgroup and made uniform, so workgroups
// past the entry's rank (or rows with no adapter, rank 0) leave before the barriers.

struct Params {
  tokens: u32,
  in_dim: u32,
  x_offset: u32,
  x_stride: u32,
  layer: u32,
  layers: u32,
  targets_per_layer: u32,
  members: u32,
  max_rank: u32,
  t_stride: u32,
  _pad0: u32,
  _pad1: u32,
  // Directory target index of each member.
  targets: vec4u,
}

const NO_ADAPTER: u32 = 0xffffffffu;

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> pool: array<f32>;
// Per (adapter, layer, target): A offset, B offset (elements of pool), rank, scale bits.
@group(0) @binding(1) var<storage, read> directory: array<vec4u>;
@group(0) @binding(2) var<storage, read> row_adapter: array<u32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read_write> t: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

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
