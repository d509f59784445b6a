enable subgroups;
// The lanes of one subgroup share a row, so each row reduces with subgroupAdd: no workgroup memory.
diagnostic(off, subgroup_uniformity);

// Matrix-vector product for few rows of x (decode) with subgroups: each subgroup takes rows of the
// workgroup's ROWS, its lanes striding over the row's units. The subgroup size is only known at run
// time, so subgroups loop over the rows rather than assume one row each.

override WG: u32 = 64u;
override ROWS: u32 = 16u;
override TT: u32 = 1u;
const MAX_T: u32 = 8u;
override UNITS: u32 = 1u;
const MAX_UNITS: u32 = 4u;

@compute @workgroup_size(WG)
fn main(
  @builtin(workgroup_id) wg: vec3u,
  @builtin(subgroup_id) sg: u32,
  @builtin(num_subgroups) nsg: u32,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) size: u32,
) {
  let first = (wg.x + wg.y * 65535u) * ROWS;
  let units = params.k / 16u;
  for (var j = sg; j < ROWS; j += nsg) {
    let n = first + j;
    if (n >= params.n) { break; }
    let r = w_row(n, params.k);
    var acc = array<vec2f, MAX_T>();
    // UNITS weight units a lane loads before it uses any, so that many reads are in flight at once.
    for (var u0 = lane; u0 < units; u0 += size * UNITS) {
      var m = array<mat4x4f, MAX_UNITS>();
      for (var i = 0u; i < UNITS; i++) {
        // Past the row's end a lane loads its last unit again, and skips it below.
        m[i] = w_unit(r, min(u0 + i * size, units - 1u));
      }
      for (var i = 0u; i < UNITS; i++) {
        let u = u0 + i * size;
        if (u < units) {
          let kk = w_unit_k(u);
          for (var t = 0u; t < TT; t++) {
            acc[t] += unit_terms(m[i], kk, params.x_offset + t * params.x_stride);
          }
        }
      }
    }
    for (var i = units * 16u + lane; i < params.k; i += size) {
      let v = w_elem(r, i);
      for (var t = 0u; t < TT; t++) {
        acc[t] += elem_terms(v, params.x_offset + t * params.x_stride, i);
      }
    }
    for (var t = 0u; t < TT; t++) {
      let v = subgroupAdd(acc[t]);
      if (lane == 0u) { store(t, n, v.x * row_scale(v.y)); }
    }
  }
}
