// F16 weights: rows of k halves as in the file, each row padded to 16 bytes.

fn w_row(n: u32, k: u32) -> vec2u {
  return vec2u(n * ((k + 7u) / 8u));
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let a = w[r.y + s * 2u];
  let b = w[r.y + s * 2u + 1u];
  return mat4x4f(w_halves(a.xy), w_halves(a.zw), w_halves(b.xy), w_halves(b.zw));
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  return w_span(r, u);
}

fn w_unit_k(u: u32) -> vec4u {
  return u * 16u + vec4u(0u, 4u, 8u, 12u);
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  return w_half(r.y, i);
}
