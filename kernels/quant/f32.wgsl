// F32 weights: rows of k floats as in the file, each row padded to 16 bytes.

fn w_row(n: u32, k: u32) -> vec2u {
  return vec2u(n * ((k + 3u) / 4u));
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let i = r.y + s * 4u;
  return mat4x4f(bitcast<vec4f>(w_ld(i)), bitcast<vec4f>(w_ld(i + 1u)), bitcast<vec4f>(w_ld(i + 2u)), bitcast<vec4f>(w_ld(i + 3u)));
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  return w_span(r, u);
}

fn w_unit_k(u: u32) -> vec4u {
  return u * 16u + vec4u(0u, 4u, 8u, 12u);
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  return bitcast<f32>(w_ld(r.y + i / 4u)[i % 4u]);
}
