// x_block() for the block-walking kernels (XBlock in quant/block-walk.wgsl) reading f32 x through x4()
// (matmul-x-aligned.wgsl or matmul-x-unaligned.wgsl): element offset xb is the row's first element.

fn x_block(xb: u32, b: u32) -> XBlock {
  let e = xb + 32u * b;
  let lo = mat4x4f(x4(e), x4(e + 4u), x4(e + 8u), x4(e + 12u));
  let hi = mat4x4f(x4(e + 16u), x4(e + 20u), x4(e + 24u), x4(e + 28u));
  return XBlock(lo, hi, 1.0, x_sum(lo, hi));
}
