// Matrix-vector product for few rows of x (decode) on CPU rasterisers: each invocation computes four
// weight rows, with no workgroup memory and no barriers. Every weight unit is decoded once for all rows
// of x, and every x load serves the four weight rows, so a batch of decode sequences streams W once.
//
// After its rows, each invocation counts itself done for the product's tail (after_rows(): see
// matvec-tail.wgsl).
//
// Template: the wrapper (matvec.ts, through kernels/unroll.ts) writes each line containing `$t` once per
// row of x, with $t = 0, 1, ... CPU rasterisers neither unroll loops nor keep dynamically indexed arrays
// in registers, so the accumulators are separate variables rather than an array indexed by a loop over t.

override WG: u32 = 32u;

// The x values of one token at a unit's four column positions.
fn x_cols(xb: u32, kk: vec4u) -> mat4x4f {
  return mat4x4f(x4(xb + kk.x), x4(xb + kk.y), x4(xb + kk.z), x4(xb + kk.w));
}

fn mat_dot(a: mat4x4f, b: mat4x4f) -> f32 {
  return dot(a[0], b[0]) + dot(a[1], b[1]) + dot(a[2], b[2]) + dot(a[3], b[3]);
}

fn store4(t: u32, n0: u32, v: vec4f) {
  store(t, n0, v.x);
  if (n0 + 1u < params.n) { store(t, n0 + 1u, v.y); }
  if (n0 + 2u < params.n) { store(t, n0 + 2u, v.z); }
  if (n0 + 3u < params.n) { store(t, n0 + 3u, v.w); }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u) {
  let n0 = ((wg.x + wg.y * 65535u) * WG + lid) * 4u;
  if (n0 >= params.n) {
    after_rows(nwg, n0);
    return;
  }
  // Past the last row, repeat it; those results are not stored.
  let nl = params.n - 1u;
  let r0 = w_row(n0, params.k);
  let r1 = w_row(min(n0 + 1u, nl), params.k);
  let r2 = w_row(min(n0 + 2u, nl), params.k);
  let r3 = w_row(min(n0 + 3u, nl), params.k);
  let units = params.k / 16u;
  let xb$t = params.x_offset + $tu * params.x_stride;
  var acc$t = vec4f();
  for (var u = 0u; u < units; u++) {
    let kk = w_unit_k(u);
    let m0 = w_unit(r0, u);
    let m1 = w_unit(r1, u);
    let m2 = w_unit(r2, u);
    let m3 = w_unit(r3, u);
    let x$t = x_cols(xb$t, kk);
    acc$t += vec4f(mat_dot(m0, x$t), mat_dot(m1, x$t), mat_dot(m2, x$t), mat_dot(m3, x$t));
  }
  for (var e = units * 16u; e < params.k; e++) {
    let v = vec4f(w_elem(r0, e), w_elem(r1, e), w_elem(r2, e), w_elem(r3, e));
    acc$t += v * x1(xb$t + e);
  }
  store4($tu, n0, acc$t);
  after_rows(nwg, n0);
}
