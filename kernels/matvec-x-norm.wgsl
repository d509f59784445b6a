// The GPU matrix-vector kernels reading RMSNorm(x) instead of x: the norm that precedes the QKV and
// gate|up products folded into them, so a decode layer needs no norm pass of its own. The product
// weighs x by the norm weight as it reads it and scales each token's result by 1 / rms as it stores:
// W (g * x * s) = s * (W (g * x)). The sum of squares behind s comes with the dot: a row's units
// cover each column of x once, so the lanes that read x for the dot also square it, and the row's
// reduction sums both. No pass over x before the weights are read (a prologue that summed the
// squares first held every workgroup's first weight load behind a read of x and a reduction).

@group(0) @binding(NORM_BINDING) var<storage, read> norm_w: array<vec4f>;

// (dot of a decoded unit with g * x at its four column positions, sum of x^2 there); row of x at xb.
fn unit_terms(m: mat4x4f, kk: vec4u, xb: u32) -> vec2f {
  let a = x4(xb + kk.x);
  let b = x4(xb + kk.y);
  let c = x4(xb + kk.z);
  let d = x4(xb + kk.w);
  let dots = dot(m[0], a * norm_w[kk.x >> 2u]) + dot(m[1], b * norm_w[kk.y >> 2u]) + dot(m[2], c * norm_w[kk.z >> 2u]) + dot(m[3], d * norm_w[kk.w >> 2u]);
  return vec2f(dots, dot(a, a) + dot(b, b) + dot(c, c) + dot(d, d));
}

// The same for one weight v at column i (the tail of a row).
fn elem_terms(v: f32, xb: u32, i: u32) -> vec2f {
  let xi = x1(xb + i);
  return vec2f(v * xi * norm_w[i >> 2u][i & 3u], xi * xi);
}

// What a row's summed dot is multiplied by when stored, given its summed squares.
fn row_scale(squares: f32) -> f32 {
  return inverseSqrt(squares / f32(params.k) + params.norm_eps);
}
