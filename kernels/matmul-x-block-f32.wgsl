// x_block() for the Q8_0 block-walking kernels (XBlock in quant/q8_0.wgsl) reading f32 x through x4()
// (matmul-x-aligned.wgsl or matmul-x-unaligned.wgsl): element offset xb is the row's first element.

fn x_block(xb: u32, b: u32) -> XBlock {
  let e = xb + 32u * b;
  return XBlock(mat4x4f(x4(e), x4(e + 4u), x4(e + 8u), x4(e + 12u)), mat4x4f(x4(e + 16u), x4(e + 20u), x4(e + 24u), x4(e + 28u)), 1.0);
}
