// Tiled matrix product for many rows of x (prefill) on CPU rasterisers, for weight types walked block by
// block (Q8_0, Q4_0, Q4_K, Q6_K: quant/block-walk.wgsl): matmul-regs.wgsl walking whole blocks. Each
// invocation computes $ROWS weight rows x $TOKENS tokens of y. A CPU rasteriser runs every storage load
// as a loop over its SIMD lanes (Mesa's llvmpipe): per 32-weight block a row costs the decoder's loads
// (matvec-rows-blocks.wgsl lists them) and a token eight x loads (three when x is quantized), shared by
// all the invocation's rows and tokens. With 16 x 16 of them the multiply-adds weigh more than the loads
// (walking K-quants in steps, which load a third as much, left this kernel's time unchanged).
//
// Template: a line containing `$r` is written once per weight row (0 .. R-1), one containing `$t` once
// per token (0 .. T-1), one containing both once per pair, one containing `$v` once per quad of rows
// (kernels/unroll.ts); the `$i` section once per block of a step, or as a loop (unroll.ts walkSteps).
// The wrapper keeps one of the two store lines (withStoreWidth): four rows at once where the dispatch's
// y allows (matmul-store4.wgsl), else one.

override WG_N: u32 = 8u;
override WG_T: u32 = 8u;

// w_step(), w_step_block() and block_dot() come with the type's decoder (quant/q8_0.wgsl, ...); x_block(xb,
// b), the 32 x values of block b of the row starting at xb, from matmul-x-block-f32.wgsl (x as f32) or
// matmul-x-block-q8.wgsl (x quantized to int8 blocks, quantize-x-block.wgsl).

@compute @workgroup_size(WG_N, WG_T)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let n0 = (wg.x * WG_N + lid.x) * $ROWSu;
  let t0 = (wg.y * WG_T + lid.y) * $TOKENSu;
  if (n0 >= params.n || t0 >= params.t) { return; }
  // Edge blocks repeat the last row of W or x; those results are not stored.
  let nl = params.n - 1u;
  let tl = params.t - 1u;
  let w$r = w_row(min(n0 + $ru, nl), params.k);
  var h$r: WState;
  let xb$t = params.x_offset + min(t0 + $tu, tl) * params.x_stride;
  var acc$r_$t = 0.0;
  // Steps of $STEP blocks (the decoder's WALK_STEP: blocks that share weight words, loaded once a step);
  // the step's blocks are a loop where writing them out would make too much code (unroll.ts walkSteps).
  let blocks = params.k / 32u;
  for (var b = 0u; b < blocks; b += $STEPu) {
    w_step(w$r, w$r, b, &h$r);
    // $i {
    let k$r_$i = w_step_block(w$r, b, $I, &h$r);
    let x$t_$i = x_block(xb$t, b + $I);
    acc$r_$t += block_dot(k$r_$i, x$t_$i);
    // $i }
  }
  if (t0 + $tu < params.t && n0 + $ru < params.n) { store(t0 + $tu, n0 + $ru, acc$r_$t); }
  if (t0 + $tu < params.t && n0 + $v0u < params.n) { store4(t0 + $tu, n0 + $v0u, vec4f(acc$v0_$t, acc$v1_$t, acc$v2_$t, acc$v3_$t)); }
}
