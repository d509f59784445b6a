// LoRA's second low-rank product, added to the base product's output: for each token row with an
// adapter, y[tok, member m's columns] += scale · B_m · t[tok, m] (t from lora-a.wgsl). One invocation per
// output element; rows without an adapter, and members the adapter does not target (rank 0), add nothing.

struct Params {
  tokens: u32,
  layer: u32,
  layers: u32,
  targets_per_layer: u32,
  members: u32,
  max_rank: u32,
  t_stride: u32,
  y_stride: u32,
  total_out: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
  // Per member: directory target index, output width, first output column in y's rows.
  targets: vec4u,
  outs: vec4u,
  y_offsets: vec4u,
}

const NO_ADAPTER: u32 = 0xffffffffu;

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> pool: array<f32>;
@group(0) @binding(1) var<storage, read> directory: array<vec4u>;
@group(0) @binding(2) var<storage, read> row_adapter: array<u32>;
@group(0) @binding(3) var<storage, read> t: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = gid.x + gid.y * nwg.x * WG;
  if (idx >= params.tokens * params.total_out) { return; }
  let tok = idx / params.total_out;
  var o = idx % params.total_out;
  var m = 0u;
  loop {
    if (m + 1u >= params.members || o < params.outs[m]) { break; }
    o -= params.outs[m];
    m += 1u;
  }
  let adapter = row_adapter[tok];
  if (adapter == NO_ADAPTER) { return; }
  let e = directory[(adapter * params.layers + params.layer) * params.targets_per_layer + params.targets[m]];
  let rank = e.z;
  if (rank == 0u) { return; }
  let b_base = e.y + o * rank;
  let t_base = tok * params.t_stride + m * params.max_rank;
  var acc = 0.0;
  for (var r = 0u; r < rank; r++) {
    acc += pool[b_base + r] * t[t_base + r];
  }
  let yi = params.y_offsets[m] + tok * params.y_stride + o;
  y[yi] = y[yi] + bitcast<f32>(e.w) * acc;
}
