// The inputs and output of lora-a.wgsl and lora-a-rows.wgsl (joined to each): t[tok, m, r] = A_m · x[tok]
// for each member m of a group of targets reading the same x, with each token row's own adapter.

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
