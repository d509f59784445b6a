// Q8_0, row-split: a row is its blocks' f16 scales (padded to 16 bytes), then each block's 32 int8
// quants (two vec4s). Moving the 2-byte scales out of the 34-byte blocks aligns every quant word at
// no cost in size. Unit u is half a block: 16 consecutive weights, one vec4.

fn w_row(n: u32, k: u32) -> vec2u {
  let nb = k / 32u;
  let head = (nb + 7u) / 8u;
  let base = n * (head + nb * 2u);
  return vec2u(base, base + head);
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let d = w_half(r.x, s >> 1u);
  let q = w[r.y + s];
  return mat4x4f(w_sbytes(q.x) * d, w_sbytes(q.y) * d, w_sbytes(q.z) * d, w_sbytes(q.w) * d);
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  return w_span(r, u);
}

fn w_unit_k(u: u32) -> vec4u {
  return u * 16u + vec4u(0u, 4u, 8u, 12u);
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  return w_span(r, i / 16u)[(i / 4u) % 4u][i % 4u];
}
