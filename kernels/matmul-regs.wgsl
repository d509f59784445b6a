// Tiled matrix product for many rows of x (prefill) on CPU rasterisers: each invocation computes a 4x4
// block of y (4 tokens x 4 weight rows) in registers, with no workgroup memory or barriers, which the
// software adapters run faster than shared-memory tiles. Each decoded weight unit serves 4 tokens and
// each x load serves 4 weight rows. Written out rather than looped: CPU rasterisers do not unroll loops
// or keep indexed arrays in registers.

override WG_N: u32 = 8u;
override WG_T: u32 = 8u;

// The x values of one token at a unit's four column positions.
fn x_cols(xb: u32, kk: vec4u) -> mat4x4f {
  return mat4x4f(x4(xb + kk.x), x4(xb + kk.y), x4(xb + kk.z), x4(xb + kk.w));
}

fn mat_dot(a: mat4x4f, b: mat4x4f) -> f32 {
  return dot(a[0], b[0]) + dot(a[1], b[1]) + dot(a[2], b[2]) + dot(a[3], b[3]);
}

// One token's partial sums against the units of four weight rows.
fn dots4(xm: mat4x4f, m0: mat4x4f, m1: mat4x4f, m2: mat4x4f, m3: mat4x4f) -> vec4f {
  return vec4f(mat_dot(m0, xm), mat_dot(m1, xm), mat_dot(m2, xm), mat_dot(m3, xm));
}

fn store4(t: u32, n0: u32, v: vec4f) {
  if (t >= params.t) { return; }
  store(t, n0, v.x);
  if (n0 + 1u < params.n) { store(t, n0 + 1u, v.y); }
  if (n0 + 2u < params.n) { store(t, n0 + 2u, v.z); }
  if (n0 + 3u < params.n) { store(t, n0 + 3u, v.w); }
}

@compute @workgroup_size(WG_N, WG_T)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n0 = (wg.x * WG_N + lid.x) * 4u;
  let t0 = (wg.y * WG_T + lid.y) * 4u;
  if (n0 >= params.n || t0 >= params.t) { return; }
  // Edge blocks repeat the last row of W or x; those results are not stored.
  let nl = params.n - 1u;
  let r0 = w_row(n0, params.k);
  let r1 = w_row(min(n0 + 1u, nl), params.k);
  let r2 = w_row(min(n0 + 2u, nl), params.k);
  let r3 = w_row(min(n0 + 3u, nl), params.k);
  let tl = params.t - 1u;
  let xb0 = params.x_offset + t0 * params.x_stride;
  let xb1 = params.x_offset + min(t0 + 1u, tl) * params.x_stride;
  let xb2 = params.x_offset + min(t0 + 2u, tl) * params.x_stride;
  let xb3 = params.x_offset + min(t0 + 3u, tl) * params.x_stride;
  // acc_j holds y[t0 + j, n0 .. n0 + 3].
  var acc0 = vec4f();
  var acc1 = vec4f();
  var acc2 = vec4f();
  var acc3 = vec4f();
  let units = params.k / 16u;
  for (var u = 0u; u < units; u++) {
    let kk = w_unit_k(u);
    let m0 = w_unit(r0, u);
    let m1 = w_unit(r1, u);
    let m2 = w_unit(r2, u);
    let m3 = w_unit(r3, u);
    acc0 += dots4(x_cols(xb0, kk), m0, m1, m2, m3);
    acc1 += dots4(x_cols(xb1, kk), m0, m1, m2, m3);
    acc2 += dots4(x_cols(xb2, kk), m0, m1, m2, m3);
    acc3 += dots4(x_cols(xb3, kk), m0, m1, m2, m3);
  }
  for (var e = units * 16u; e < params.k; e++) {
    let v = vec4f(w_elem(r0, e), w_elem(r1, e), w_elem(r2, e), w_elem(r3, e));
    acc0 += v * x1(xb0 + e);
    acc1 += v * x1(xb1 + e);
    acc2 += v * x1(xb2 + e);
    acc3 += v * x1(xb3 + e);
  }
  store4(t0, n0, acc0);
  store4(t0 + 1u, n0, acc1);
  store4(t0 + 2u, n0, acc2);
  store4(t0 + 3u, n0, acc3);
}
