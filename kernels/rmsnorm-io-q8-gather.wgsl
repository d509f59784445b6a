// RMSNorm of picked rows into rows quantized to int8 blocks: xq[r] = q8(norm(x[idx[r]])), the output
// head's input where it reads quantized x (rmsnorm-serial-q8.wgsl; see rmsnorm-io-gather.wgsl).
@group(0) @binding(0) var<storage, read> x: array<vec4f>;
@group(0) @binding(1) var<storage, read> w: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> xq: array<vec4u>;
@group(0) @binding(3) var<storage, read> idx: array<u32>;

fn x_row(row: u32) -> u32 {
  return idx[row];
}
