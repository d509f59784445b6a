// BF16 weights: rows of k bfloat16 as in the file, each row padded to 16 bytes. A bf16 is the top half
// of an f32, so decoding is a shift or a mask.

fn w_row(n: u32, k: u32) -> vec2u {
  return vec2u(n * ((k + 7u) / 8u));
}

fn w_bf16x4(v: vec2u) -> vec4f {
  return bitcast<vec4f>(vec4u(v.x << 16u, v.x & 0xffff0000u, v.y << 16u, v.y & 0xffff0000u));
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let a = w_ld(r.y + s * 2u);
  let b = w_ld(r.y + s * 2u + 1u);
  return mat4x4f(w_bf16x4(a.xy), w_bf16x4(a.zw), w_bf16x4(b.xy), w_bf16x4(b.zw));
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  return w_span(r, u);
}

fn w_unit_k(u: u32) -> vec4u {
  return u * 16u + vec4u(0u, 4u, 8u, 12u);
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  let v = w_ld(r.y + i / 8u)[(i / 2u) % 4u];
  return bitcast<f32>(select(v << 16u, v & 0xffff0000u, (i & 1u) == 1u));
}
