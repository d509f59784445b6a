// The loads of the GPU tiled products (matmul-tiles.wgsl, matmul-tiles-vec4.wgsl) at a matrix's edges,
// and the store of the tiles whose invocations hold tokens 8 apart (-vec4, -dp4a).

// Span s (weights 16 s .. 16 s + 15) of the row w_row gave, zeros past k, all zeros for a row past the
// matrix (`live` false: its row index was clamped to the last row).
fn w_span_or_zero(wr: vec2u, s: u32, live: bool) -> mat4x4f {
  var m = mat4x4f();
  if (live) {
    if (s * 16u + 16u <= params.k) {
      m = w_span(wr, s);
    } else {
      for (var e = 0u; e < 16u; e++) {
        if (s * 16u + e < params.k) { m[e / 4u][e % 4u] = w_elem(wr, s * 16u + e); }
      }
    }
  }
  return m;
}

// x[i .. i + 3], column kg of its row at i, zeros past k; all zeros for a token past the step (`live` false).
fn x4_or_zero(i: u32, kg: u32, live: bool) -> vec4f {
  var v = vec4f();
  if (live) {
    if (kg + 4u <= params.k) {
      v = x4(i);
    } else {
      for (var q = 0u; q < 4u; q++) {
        if (kg + q < params.k) { v[q] = x1(i + q); }
      }
    }
  }
  return v;
}

// Row n of y (a tile invocation's row) for tokens t, t + 8, t + 16, t + 24.
fn store_tokens(t: u32, n: u32, v: vec4f) {
  if (n >= params.n) { return; }
  for (var j = 0u; j < 4u; j++) {
    if (t + 8u * j < params.t) { store(t + 8u * j, n, v[j]); }
  }
}

// Four of an invocation's rows, n + 16 i (a_i), for tokens t, t + 8, t + 16, t + 24.
fn store_rows4(t: u32, n: u32, a0: vec4f, a1: vec4f, a2: vec4f, a3: vec4f) {
  store_tokens(t, n, a0);
  store_tokens(t, n + 16u, a1);
  store_tokens(t, n + 32u, a2);
  store_tokens(t, n + 48u, a3);
}

// An invocation's 8 x 4 outputs in the 128-row tiles: rows n + 16 i (acc_i) for tokens t, t + 8, t + 16, t + 24.
fn store_tile(t: u32, n: u32, a0: vec4f, a1: vec4f, a2: vec4f, a3: vec4f, a4: vec4f, a5: vec4f, a6: vec4f, a7: vec4f) {
  store_rows4(t, n, a0, a1, a2, a3);
  store_rows4(t, n + 64u, a4, a5, a6, a7);
}
