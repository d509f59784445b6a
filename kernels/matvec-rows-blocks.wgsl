// Matrix-vector product for few rows of x (decode) on CPU rasterisers, for weight types walked block by
// block (Q8_0, Q4_0, Q4_K, Q6_K: quant/block-walk.wgsl): matvec-rows.wgsl specialised to whole blocks. A CPU
// rasteriser runs every storage load as a loop over its SIMD lanes with a bounds check per component
// (Mesa's llvmpipe), so the count of loads, not of bytes, sets the speed. Here each of an invocation's
// $ROWS weight rows costs, per 32-weight block, two quant loads for Q8_0 (one for Q4_0; Q4_K 9 loads per
// 8 blocks, Q6_K 7 per 4, its steps' shared words loaded once a step), the row-split types' block scales
// one vec4 for all $ROWS rows on CPU layouts (w_scale in quant/common.wgsl; one a row otherwise), and
// each row of x eight loads per block (three when quantized), shared by all the invocation's weight rows.
//
// After its rows, each invocation counts itself done for the product's tail (after_rows(): see
// matvec-tail.wgsl).
//
// Template: a line containing `$r` is written once per weight row (0 .. R-1), one containing `$t` once
// per row of x (0 .. t-1), one containing both once per pair, one containing `$v` once per quad of rows
// (kernels/unroll.ts); the `$i` section once per block of a step, or as a loop (unroll.ts walkSteps). The
// wrapper keeps one of the two store lines (withStoreWidth): four rows at once where the dispatch's y
// allows (matmul-store4.wgsl), else one.

// w_step(), w_step_block() and block_dot() come with the type's decoder (quant/q8_0.wgsl, ...), x_block()
// with matmul-x-block-f32.wgsl, or matmul-x-block-q8.wgsl where x is quantized (three loads per block
// instead of eight: 37% less time for a 96 MiB Q8_0 product on llvmpipe).

override WG: u32 = 32u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32, @builtin(num_workgroups) nwg: vec3u) {
  let n0 = ((wg.x + wg.y * 65535u) * WG + lid) * $ROWSu;
  if (n0 >= params.n) {
    after_rows(nwg, n0);
    return;
  }
  // Past the last row, repeat it (where the layout's groups are single rows); those results are not
  // stored.
  let nl = params.n - 1u;
  // Where the layout's groups hold whole invocations (CPU layouts: 8 rows), the invocation's rows are one
  // group, which the buffer holds whole (rows past the matrix are zeros), so they are read unclamped: row
  // $r is then the group's row $r at compile time (its scale a fixed half of the scale vec4 they share
  // through the first row's handle, w_step's lead).
  let grouped = W_GROUP % $ROWSu == 0u;
  let w$r = w_row(select(min(n0 + $ru, nl), n0 + $ru, grouped), params.k);
  let lead$r = select(w$r, w0, grouped);
  var h$r: WState;
  let xb$t = params.x_offset + $tu * params.x_stride;
  var acc$r_$t = 0.0;
  // Steps of $STEP blocks (the decoder's WALK_STEP: blocks that share weight words, loaded once a step;
  // K-quant rows are whole steps), the step's blocks written out where that makes little enough code
  // (unroll.ts walkSteps).
  let blocks = params.k / 32u;
  for (var b = 0u; b < blocks; b += $STEPu) {
    w_step(w$r, lead$r, b, &h$r);
    // $i {
    let k$r_$i = w_step_block(w$r, b, $I, &h$r);
    let x$t_$i = x_block(xb$t, b + $I);
    acc$r_$t += block_dot(k$r_$i, x$t_$i);
    // $i }
  }
  if (n0 + $ru < params.n) { store($tu, n0 + $ru, acc$r_$t); }
  if (n0 + $v0u < params.n) { store4($tu, n0 + $v0u, vec4f(acc$v0_$t, acc$v1_$t, acc$v2_$t, acc$v3_$t)); }
  after_rows(nwg, n0);
}
