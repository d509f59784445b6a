// Q4_0 weights for the int8 products (matvec-dp4a.wgsl, matmul-tiles-dp4a.wgsl): block b's 16 bytes of
// nibbles spread to one byte a weight (byte j's low nibble is element j, its high nibble element 16 + j,
// so the low nibbles of the four words are elements 0..15 in order and the high ones 16..31), and its
// step: a weight is (q - 8) d.

fn w_int8(r: vec2u, b: u32) -> WInt8 {
  let q = w_ld(r.y + b * W_GROUP);
  let m = vec4u(0x0f0f0f0fu);
  let d = w_scale(r, b);
  return WInt8(q & m, (q >> vec4u(4u)) & m, vec2f(d), vec2f(-8.0 * d));
}
