// Tiled matrix product for many rows of x (prefill) on CPU rasterisers: each invocation computes $ROWS
// weight rows x $TOKENS tokens of y in registers, with no workgroup memory or barriers, which the software
// adapters run faster than shared-memory tiles. A CPU rasteriser runs every storage load as a loop over
// its SIMD lanes (Mesa's llvmpipe), so loads, not multiply-adds, bound the speed: each decoded weight
// unit (16 weights) serves every token of the block and each x load every row.
//
// Template: a line containing `$r` is written once per weight row (0 .. R-1), one containing `$t` once
// per token (0 .. T-1), one containing both once per pair, one containing `$v` once per quad of rows
// (kernels/unroll.ts). The wrapper keeps one of the two store lines (withStoreWidth): four rows at once
// where the dispatch's y allows (matmul-store4.wgsl), else one. CPU rasterisers neither
// unroll loops nor keep indexed arrays in registers.

override WG_N: u32 = 8u;
override WG_T: u32 = 1u;

// The x values of one token at a unit's four column positions.
fn x_cols(xb: u32, kk: vec4u) -> mat4x4f {
  return mat4x4f(x4(xb + kk.x), x4(xb + kk.y), x4(xb + kk.z), x4(xb + kk.w));
}

fn mat_dot(a: mat4x4f, b: mat4x4f) -> f32 {
  return dot(a[0], b[0]) + dot(a[1], b[1]) + dot(a[2], b[2]) + dot(a[3], b[3]);
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
  let xb$t = params.x_offset + min(t0 + $tu, tl) * params.x_stride;
  var acc$r_$t = 0.0;
  let units = params.k / 16u;
  for (var u = 0u; u < units; u++) {
    let kk = w_unit_k(u);
    let m$r = w_unit(w$r, u);
    let x$t = x_cols(xb$t, kk);
    acc$r_$t += mat_dot(m$r, x$t);
  }
  for (var e = units * 16u; e < params.k; e++) {
    let v$r = w_elem(w$r, e);
    let xe$t = x1(xb$t + e);
    acc$r_$t += v$r * xe$t;
  }
  if (t0 + $tu < params.t && n0 + $ru < params.n) { store(t0 + $tu, n0 + $ru, acc$r_$t); }
  if (t0 + $tu < params.t && n0 + $v0u < params.n) { store4(t0 + $tu, n0 + $v0u, vec4f(acc$v0_$t, acc$v1_$t, acc$v2_$t, acc$v3_$t)); }
}
