// RMSNorm from x into rows quantized to int8 blocks (rmsnorm-serial-q8.wgsl).
@group(0) @binding(0) var<storage, read> x: array<vec4f>;
@group(0) @binding(1) var<storage, read> w: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> xq: array<vec4u>;

fn x_row(row: u32) -> u32 {
  return row;
}
