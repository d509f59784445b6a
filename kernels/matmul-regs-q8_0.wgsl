// Tiled matrix product for many rows of x (prefill) on CPU rasterisers, Q8_0 weights: matmul-regs.wgsl
// walking whole blocks, with a larger register block. Each invocation computes $ROWS weight rows x
// $TOKENS tokens of y. A CPU rasteriser runs every storage load as a loop over its SIMD lanes (Mesa's
// llvmpipe), so loads, not multiply-adds, bound the speed: per 32-weight block a row costs two quant
// loads (its scale header vec4, 8 blocks' scales, once per 8 blocks) and a token eight x loads (three
// when x is quantized), shared by all the invocation's rows and tokens.
//
// Template: a line containing `$r` is written once per weight row (0 .. R-1), one containing `$t` once
// per token (0 .. T-1), one containing both once per pair (kernels/unroll.ts).

override WG_N: u32 = 8u;
override WG_T: u32 = 8u;

// Scale of block b from a header vec4 holding the scales of blocks b & ~7 .. (b & ~7) + 7.
fn header_scale(h: vec4u, b: u32) -> f32 {
  return unpack2x16float(h[(b >> 1u) & 3u])[b & 1u];
}

// x_block(xb, b) -> XBlock (32 x values of block b of the row starting at xb, times XBlock.d) comes from
// matmul-x-block-f32.wgsl (x as f32) or matmul-x-block-q8.wgsl (x quantized by quantize-x-q8.wgsl).

// 32 int8 quants (two vec4s of words) dotted with 32 x values (eight vec4s).
fn block_dot(q0: vec4u, q1: vec4u, x0: mat4x4f, x1: mat4x4f) -> f32 {
  return dot(w_sbytes(q0.x), x0[0]) + dot(w_sbytes(q0.y), x0[1]) + dot(w_sbytes(q0.z), x0[2]) + dot(w_sbytes(q0.w), x0[3])
    + dot(w_sbytes(q1.x), x1[0]) + dot(w_sbytes(q1.y), x1[1]) + dot(w_sbytes(q1.z), x1[2]) + dot(w_sbytes(q1.w), x1[3]);
}

@compute @workgroup_size(WG_N, WG_T)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n0 = (wg.x * WG_N + lid.x) * $ROWSu;
  let t0 = (wg.y * WG_T + lid.y) * $TOKENSu;
  if (n0 >= params.n || t0 >= params.t) { return; }
  // Edge blocks repeat the last row of W or x; those results are not stored.
  let nl = params.n - 1u;
  let tl = params.t - 1u;
  let w$r = w_row(min(n0 + $ru, nl), params.k);
  var h$r = vec4u();
  let xb$t = params.x_offset + min(t0 + $tu, tl) * params.x_stride;
  var acc$r_$t = 0.0;
  let blocks = params.k / 32u;
  for (var b = 0u; b < blocks; b++) {
    // The same branch in every lane: b is uniform.
    if ((b & 7u) == 0u) {
      h$r = w[w$r.x + (b >> 3u)];
    }
    let d$r = header_scale(h$r, b);
    let qa$r = w[w$r.y + 2u * b];
    let qb$r = w[w$r.y + 2u * b + 1u];
    let x$t = x_block(xb$t, b);
    acc$r_$t += d$r * x$t.d * block_dot(qa$r, qb$r, x$t.lo, x$t.hi);
  }
  if (t0 + $tu < params.t && n0 + $ru < params.n) { store(t0 + $tu, n0 + $ru, acc$r_$t); }
}
