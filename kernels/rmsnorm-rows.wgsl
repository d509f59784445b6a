// Shared by rmsnorm.wgsl and rmsnorm-serial.wgsl: parameters and where each row and its weight live.

struct Params {
  rows: u32,
  dim: u32,
  eps: f32,
  // Offset (in elements) of row 0 in x and y, so a kernel can work on a slice of a larger activation buffer.
  x_offset: u32,
  y_offset: u32,
  // Rows come in groups of `group` adjacent rows (a token's heads), groups `x_stride` / `y_stride` apart,
  // so per-head norms can address heads inside a wider per-token row (qwen3's Q and K in the qkv row).
  // Plain rows: group 1, strides = dim.
  group: u32,
  x_stride: u32,
  y_stride: u32,
  // Rows at index >= w_split within their group use the second of two stacked weight vectors, w[dim ..]
  // (qwen3: Q heads take attn_q_norm, K heads attn_k_norm, in one dispatch). No split: w_split >= group.
  w_split: u32,
}

@group(1) @binding(0) var<uniform> params: Params;

// x_row(row): which row of x output row `row` normalizes (itself, or a picked one), from rmsnorm-io-*.wgsl.
fn x_base(row: u32) -> u32 {
  let xr = x_row(row);
  return params.x_offset + (xr / params.group) * params.x_stride + (xr % params.group) * params.dim;
}

fn y_base(row: u32) -> u32 {
  return params.y_offset + (row / params.group) * params.y_stride + (row % params.group) * params.dim;
}

fn w_base(row: u32) -> u32 {
  return select(0u, params.dim, row % params.group >= params.w_split);
}
