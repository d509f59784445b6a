// Q8_0 weights for the int8 products (matvec-dp4a.wgsl, matmul-tiles-dp4a.wgsl): block b of the row
// with handle r as it lies, 32 quants and its step, no offset.

fn w_int8(r: vec2u, b: u32) -> WInt8 {
  return WInt8(w_quants(r, 2u * b), w_quants(r, 2u * b + 1u), vec2f(w_scale(r, b)), vec2f());
}
