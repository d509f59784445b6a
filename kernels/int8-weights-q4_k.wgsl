// Q4_K weights for the int8 products (matvec-dp4a.wgsl, matmul-tiles-dp4a.wgsl): 32-element sub-block
// b (sub-block b % 8 of block b / 8) as bytes and its scale and min (q4k_scales): a weight is
// d scale q - dmin min. A chunk's two quant vec4s hold the even sub-block in their low nibbles and the
// odd one in their high nibbles, each in element order.

fn w_int8(r: vec2u, b: u32) -> WInt8 {
  let base = r.y + (b >> 3u) * 9u * W_GROUP;
  let j = b & 7u;
  let sm = q4k_scales(w_ld(base), j & 6u);
  let odd = (j & 1u) == 1u;
  let sh = vec4u(select(0u, 4u, odd));
  let m = vec4u(0x0f0f0f0fu);
  let c = base + 1u + (j >> 1u) * 2u;
  return WInt8((w_ld(c) >> sh) & m, (w_ld(c + 1u) >> sh) & m, vec2f(select(sm.x, sm.z, odd)), vec2f(-select(sm.y, sm.w, odd)));
}
