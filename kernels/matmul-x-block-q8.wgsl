// x_block() for the block-walking kernels (XBlock in quant/block-walk.wgsl) reading x quantized by
// quantize-x-q8.wgsl, vec4 i as xq_ld(i) (matmul-xq-buffer.wgsl, or withTextureX in
// matmul-x-texture.ts): xb is the row's first vec4 (the product's x offset and stride count vec4s here);
// block b's quants are two vec4s of its group of 4 blocks, its scale a component of the group's last
// vec4 (q8BlockLayout, quantize-x.ts).
// Within a block the products of int8 values sum exactly in f32 (32 x 127 x 127 < 2^24), as llama.cpp's
// integer sums do.

fn x_block(xb: u32, b: u32) -> XBlock {
  let group = xb + (b >> 2u) * 9u;
  let o = group + (b & 3u) * 2u;
  let a = xq_ld(o);
  let c = xq_ld(o + 1u);
  let d = bitcast<f32>(xq_ld(group + 8u)[b & 3u]);
  let lo = mat4x4f(w_sbytes(a.x), w_sbytes(a.y), w_sbytes(a.z), w_sbytes(a.w));
  let hi = mat4x4f(w_sbytes(c.x), w_sbytes(c.y), w_sbytes(c.z), w_sbytes(c.w));
  return XBlock(lo, hi, d, x_sum(lo, hi));
}
