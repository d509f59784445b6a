// Matrix-vector product for few rows of x (decode) on CPU rasterisers, Q8_0 weights: matvec-rows.wgsl
// specialised to walk whole blocks. A CPU rasteriser runs every storage load as a loop over its SIMD
// lanes with a bounds check per component (Mesa's llvmpipe), so the count of loads, not of bytes or of
// multiply-adds, sets the speed. Here each of an invocation's $ROWS weight rows costs two quant loads
// per 32-weight block plus its scale header vec4 (8 blocks' scales) once per 8 blocks, and each row of
// x eight loads per block, shared by all the invocation's weight rows.
//
// Template: a line containing `$r` is written once per weight row (0 .. R-1), one containing `$t` once
// per row of x (0 .. t-1), one containing both once per pair (kernels/unroll.ts).

override WG: u32 = 32u;

// Scale of block b from a header vec4 holding the scales of blocks b & ~7 .. (b & ~7) + 7.
fn header_scale(h: vec4u, b: u32) -> f32 {
  return unpack2x16float(h[(b >> 1u) & 3u])[b & 1u];
}

// 32 int8 quants (two vec4s of words) dotted with 32 x values (eight vec4s).
fn block_dot(q0: vec4u, q1: vec4u, x0: mat4x4f, x1: mat4x4f) -> f32 {
  return dot(w_sbytes(q0.x), x0[0]) + dot(w_sbytes(q0.y), x0[1]) + dot(w_sbytes(q0.z), x0[2]) + dot(w_sbytes(q0.w), x0[3])
    + dot(w_sbytes(q1.x), x1[0]) + dot(w_sbytes(q1.y), x1[1]) + dot(w_sbytes(q1.z), x1[2]) + dot(w_sbytes(q1.w), x1[3]);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n0 = ((wg.x + wg.y * 65535u) * WG + lid) * $ROWSu;
  if (n0 >= params.n) { return; }
  // Past the last row, repeat it; those results are not stored.
  let nl = params.n - 1u;
  let w$r = w_row(min(n0 + $ru, nl), params.k);
  var h$r = vec4u();
  let xb$t = params.x_offset + $tu * params.x_stride;
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
    let xk$t = xb$t + 32u * b;
    let xa$t = mat4x4f(x4(xk$t), x4(xk$t + 4u), x4(xk$t + 8u), x4(xk$t + 12u));
    let xc$t = mat4x4f(x4(xk$t + 16u), x4(xk$t + 20u), x4(xk$t + 24u), x4(xk$t + 28u));
    acc$r_$t += d$r * block_dot(qa$r, qb$r, xa$t, xc$t);
  }
  if (n0 + $ru < params.n) { store($tu, n0 + $ru, acc$r_$t); }
}
