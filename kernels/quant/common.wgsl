// Shared by every weight decoder. A kernel that includes a decoder has a 'weights' binding, whose
// declaration KernelContext writes for the device (kernels/runtime/weights.ts): vec4 i of the matrix is
// w_ld(i), from a storage buffer or an rgba32uint texture.
// Every structure in the layouts (rows, scale headers, blocks) starts on a 16-byte boundary, so decoders
// fetch whole vec4s: one load instead of four on CPU rasterisers, 128-bit loads on GPUs.
// A weight row is addressed through a handle from w_row(): x = the half index of the row's first f16
// scale (row-split types, w_scale below), y = first vec4 of its packed blocks. Every decoder provides:
//   w_row(n, k) -> vec2u          handle of row n of a matrix whose rows hold k elements
//   w_unit(r, u) -> mat4x4f       the u-th 16 weights of the row, as 4 columns of 4 consecutive k each,
//                                 grouped so that all bits of the words read are used
//   w_unit_k(u) -> vec4u          the first k of each of those columns (multiples of 4)
//   w_span(r, s) -> mat4x4f       weights k = 16s .. 16s+15 in order (column c holds 16s+4c ..)
//   w_elem(r, i) -> f32           weight k = i (for the tail of float rows whose k % 16 != 0)
// Units per row are k / 16 for every type; only F32/F16/BF16 rows can have a tail.

// The row-split layouts' f16 scales (Q8_0, Q4_0, Q6_K: layouts.ts rowSplit). A group of W_GROUP rows keeps
// its rows' scales block by block (block 0 of each row, then block 1 of each, ...), so the 8 rows a CPU
// decode invocation walks find a block's scales in one vec4, loaded once for the 8 (w_step's `lead`);
// with one row a group (GPUs) that is the row's scales in order. A handle's x is the half index of its
// row's block-0 scale: block b's is W_GROUP * b further.
fn w_scale_index(r: vec2u, b: u32) -> u32 {
  return r.x + b * W_GROUP;
}

// The scale of half index i from the vec4 that holds it (vec4 i >> 3 of the matrix).
fn scale_in(h: vec4u, i: u32) -> f32 {
  return unpack2x16float(h[(i >> 1u) & 3u])[i & 1u];
}

fn w_scale(r: vec2u, b: u32) -> f32 {
  let i = w_scale_index(r, b);
  return scale_in(w_ld(i >> 3u), i);
}

fn w_bytes(v: u32) -> vec4u {
  return (vec4u(v) >> vec4u(0u, 8u, 16u, 24u)) & vec4u(0xffu);
}

fn w_sbytes(v: u32) -> vec4f {
  return vec4f(bitcast<vec4i>(vec4u(v) << vec4u(24u, 16u, 8u, 0u)) >> vec4u(24u));
}

fn w_lo4(v: u32) -> vec4f {
  return vec4f((vec4u(v) >> vec4u(0u, 8u, 16u, 24u)) & vec4u(15u));
}

fn w_hi4(v: u32) -> vec4f {
  return vec4f((vec4u(v) >> vec4u(4u, 12u, 20u, 28u)) & vec4u(15u));
}

// For block_dot (quant/block-walk.wgsl), whose CPU kernels spend about as many instructions unpacking a
// weight as multiplying it: quants left where they sit in their word, masked but not shifted down, so
// byte j of a word counts 2^(8j) times its value, and x scaled the other way by X_PLACE (once per block for
// all the rows an invocation walks). Shifting a 4-bit quant down and masking it took a shift and a mask
// a byte (the lowest byte only the mask), placed it takes the mask alone. Both factors move by a power
// of two, so each product is the same number (exactly, for x above 2^-100) and the sums are bit for bit
// those of the quants shifted down.
const X_PLACE = vec4f(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0 / 16777216.0);

fn w_lo4_placed(v: u32) -> vec4f {
  return vec4f(bitcast<vec4i>(vec4u(v) & vec4u(0xfu, 0xf00u, 0xf0000u, 0xf000000u)));
}

// Signed bytes, each times 2^24: moved to the top of the word, not shifted back down (one shift and a
// mask, the lowest byte only the shift, the highest only the mask).
fn w_sbytes_top(v: u32) -> vec4f {
  return vec4f(bitcast<vec4i>((vec4u(v) << vec4u(24u, 16u, 8u, 0u)) & vec4u(0xff000000u)));
}

fn w_halves(v: vec2u) -> vec4f {
  return vec4f(unpack2x16float(v.x), unpack2x16float(v.y));
}
