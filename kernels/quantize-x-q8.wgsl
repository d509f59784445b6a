// Rows of x quantized to int8 in blocks of 32 (put_q8_block, quantize-x-block.wgsl: llama.cpp's
// quantization of activations for Q8_0 products). A CPU rasteriser's Q8_0 products (matvec-rows-q8_0.wgsl
// and matmul-regs-q8_0.wgsl with matmul-x-block-q8.wgsl) then load three vec4s per token and block
// instead of eight. Row r of xq starts at vec4 r * row_vec4s.

struct Params {
  tokens: u32,
  k: u32,
  // Element offset of x[0, 0] and elements between rows of x (multiples of 4).
  x_offset: u32,
  x_stride: u32,
  // vec4s between rows of xq (3 per block).
  row_vec4s: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> xq: array<vec4u>;
@group(1) @binding(0) var<uniform> params: Params;

// One invocation per (token, block).
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let blocks = params.k / 32u;
  let item = gid.x + gid.y * nwg.x * WG;
  if (item >= params.tokens * blocks) { return; }
  let t = item / blocks;
  let b = item % blocks;
  let xb = (params.x_offset + t * params.x_stride) / 4u + 8u * b;
  var v: array<vec4f, 8>;
  for (var i = 0u; i < 8u; i++) { v[i] = x[xb + i]; }
  put_q8_block(t * params.row_vec4s + 3u * b, v);
}
