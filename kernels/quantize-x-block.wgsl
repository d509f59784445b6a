// One block of 32 activations quantized to int8 the way llama.cpp's CPU backend quantizes activations
// for its Q8_0 and Q4_0 products (quantize_row_q8_0, SIMD path): d = max|x| / 127 kept as f16,
// q = round-half-even(x / d) with the f32 d. Shared by quantize-x-q8.wgsl, rmsnorm-serial-q8.wgsl and
// swiglu-q8.wgsl, so x quantized after a pass and x quantized by that pass itself are the same bits.
//
// A quantized row: blocks b = 0 .. k/32-1 at vec4s 3b: two vec4s of quants (byte i of the pair is
// element 32b + i), then the scale in .x of the third (the other words are 0).

fn pack_bytes(v: vec4f) -> u32 {
  let b = bitcast<vec4u>(vec4i(v)) & vec4u(0xffu);
  return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

// Writes block `v` (32 values, in order) at vec4s o .. o + 2 of xq.
fn put_q8_block(o: u32, v: array<vec4f, 8>) {
  var m = vec4f();
  for (var i = 0u; i < 8u; i++) { m = max(m, abs(v[i])); }
  let amax = max(max(m.x, m.y), max(m.z, m.w));
  // As quantize_row_q8_0: the inverse of the f32 step, not 127 / max, so values on a rounding boundary
  // go the way llama.cpp's do.
  let step = amax / 127.0;
  let id = select(0.0, 1.0 / step, step != 0.0);
  let d = unpack2x16float(pack2x16float(vec2f(step, 0.0))).x;
  xq[o] = vec4u(pack_bytes(round(v[0] * id)), pack_bytes(round(v[1] * id)), pack_bytes(round(v[2] * id)), pack_bytes(round(v[3] * id)));
  xq[o + 1u] = vec4u(pack_bytes(round(v[4] * id)), pack_bytes(round(v[5] * id)), pack_bytes(round(v[6] * id)), pack_bytes(round(v[7] * id)));
  xq[o + 2u] = vec4u(bitcast<u32>(d), 0u, 0u, 0u);
}
