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

@compute @workgroup_size(WG)
fn main(
  @builtin(workgroup_id) wg: vec3u,
  @builtin(subgroup_id) sg: u32,
  @builtin(num_subgroups) nsg: u32,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) size: u32,
  @builtin(local_invocation_index) lid: u32,
) {
  norm_prologue(lid);
  let first = (wg.x + wg.y * 65535u) * ROWS;
  let units = params.k / 16u;
  for (var j = sg; j < ROWS; j += nsg) {
    let n = first + j;
    if (n >= params.n) { break; }
    let r = w_row(n, params.k);
    var acc: array<f32, MAX_T>;
    for (var u = lane; u < units; u += size) {
      let m = w_unit(r, u);
      let kk = w_unit_k(u);
      for (var t = 0u; t < TT; t++) {
        acc[t] += unit_dot(m, kk, params.x_offset + t * params.x_stride);
      }
    }
    for (var i = units * 16u + lane; i < params.k; i += size) {
      let v = w_elem(r, i);
      for (var t = 0u; t < TT; t++) {
        acc[t] += v * x_at(params.x_offset + t * params.x_stride, i);
      }
    }
    for (var t = 0u; t < TT; t++) {
      let v = subgroupAdd(acc[t]);
      if (lane == 0u) { store(t, n, v * out_scale(t)); }
    }
  }
}
