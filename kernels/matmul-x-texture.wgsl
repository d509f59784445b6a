// Quantized x read through a read-only storage texture (matmul-x-texture.ts), for the CPU rasterisers'
// tiled products: vec4 i of x is texel (i % 4096, i / 4096). Replaces matmul-xq-buffer.wgsl, and x's
// buffer declaration in matmul-common.wgsl.
@group(0) @binding(1) var x_tex: texture_storage_2d<rgba32uint, read>;

fn xq_ld(i: u32) -> vec4u {
  return textureLoad(x_tex, vec2u(i & 4095u, i >> 12u));
}
