// F16 weights: rows of k halves as in the file, each row padded to 16 bytes. In groups of W_GROUP rows
// (layouts.ts; 1 on GPUs): rows padded to whole 16-half units (two vec4s), and unit s of each of the
// group's rows together, so a CPU rasteriser's invocation walking W_GROUP rows side by side reads one
// stream.

fn w_row(n: u32, k: u32) -> vec2u {
  if (W_GROUP == 1u) {
    return vec2u(n * ((k + 7u) / 8u));
  }
  let units = (k + 15u) / 16u;
  return vec2u((n / W_GROUP) * W_GROUP * units * 2u + (n % W_GROUP) * 2u);
}

// The row's vec4 j (halves 8j .. 8j + 7).
fn w_vec(r: vec2u, j: u32) -> vec4u {
  return w_ld(r.y + (j >> 1u) * 2u * W_GROUP + (j & 1u));
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let a = w_vec(r, s * 2u);
  let b = w_vec(r, s * 2u + 1u);
  return mat4x4f(w_halves(a.xy), w_halves(a.zw), w_halves(b.xy), w_halves(b.zw));
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  return w_span(r, u);
}

fn w_unit_k(u: u32) -> vec4u {
  return u * 16u + vec4u(0u, 4u, 8u, 12u);
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  return unpack2x16float(w_vec(r, i >> 3u)[(i >> 1u) & 3u])[i & 1u];
}
