// Matrix-vector product for few rows of x (decode) on GPUs without subgroups: LANES threads share a
// weight row, striding over its units so neighbouring threads read neighbouring words, then reduce
// their partial sums (and, for norm-fused products, sums of squares) in workgroup memory. WG / LANES
// rows per workgroup.

override WG: u32 = 64u;
override LANES: u32 = 16u;
override TT: u32 = 1u;
const MAX_T: u32 = 8u;

var<workgroup> red: array<vec2f, WG * TT>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n = (wg.x + wg.y * 65535u) * (WG / LANES) + lid / LANES;
  let lane = lid % LANES;
  let live = n < params.n;
  var acc: array<vec2f, MAX_T>;
  if (live) {
    let r = w_row(n, params.k);
    let units = params.k / 16u;
    for (var u = lane; u < units; u += LANES) {
      let m = w_unit(r, u);
      let kk = w_unit_k(u);
      for (var t = 0u; t < TT; t++) {
        acc[t] += unit_terms(m, kk, params.x_offset + t * params.x_stride);
      }
    }
    for (var i = units * 16u + lane; i < params.k; i += LANES) {
      let v = w_elem(r, i);
      for (var t = 0u; t < TT; t++) {
        acc[t] += elem_terms(v, params.x_offset + t * params.x_stride, i);
      }
    }
  }
  for (var t = 0u; t < TT; t++) {
    red[t * WG + lid] = acc[t];
  }
  for (var s = LANES / 2u; s > 0u; s >>= 1u) {
    workgroupBarrier();
    if (lane < s) {
      for (var t = 0u; t < TT; t++) {
        red[t * WG + lid] += red[t * WG + lid + s];
      }
    }
  }
  // Lane 0 wrote its own slots last, so it needs no further barrier to read them.
  if (live && lane == 0u) {
    for (var t = 0u; t < TT; t++) {
      let r = red[t * WG + lid];
      store(t, n, r.x * row_scale(r.y));
    }
  }
}
