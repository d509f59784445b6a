// Rows of x quantized to int8 in blocks of 32 (put_xq_group, quantize-x-block.wgsl: llama.cpp's
// quantization of activations). A CPU rasteriser's Q8_0 products (matvec-rows-q8_0.wgsl
// and matmul-regs-q8_0.wgsl with matmul-x-block-q8.wgsl) then load three vec4s per token and block
// (two of quants, one holding the scales of four blocks) instead of eight. Row r of xq starts at vec4
// r * row_vec4s (q8RowVec4s).

struct Params {
  tokens: u32,
  k: u32,
  // Element offset of x[0, 0] and elements between rows of x (multiples of 4).
  x_offset: u32,
  x_stride: u32,
  // vec4s between rows of xq (q8RowVec4s).
  row_vec4s: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> xq: array<vec4u>;
@group(1) @binding(0) var<uniform> params: Params;

var<private> src_row: u32;

fn x_value(i: u32) -> vec4f {
  return x[src_row + i];
}

// One invocation per (token, group of XQ_GROUP values).
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let groups = params.k / XQ_GROUP;
  let item = gid.x + gid.y * nwg.x * WG;
  if (item >= params.tokens * groups) { return; }
  let t = item / groups;
  let g = item % groups;
  src_row = (params.x_offset + t * params.x_stride) / 4u;
  put_xq_group(t * params.row_vec4s, g * (XQ_GROUP / 32u), g * (XQ_GROUP / 4u));
}
