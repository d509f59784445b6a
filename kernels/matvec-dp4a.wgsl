enable subgroups;
// Subgroups share rows by the subgroup they are (sg, lane), as matvec-subgroup.wgsl does.
diagnostic(off, subgroup_uniformity);

// Matrix-vector product of Q8_0, Q4_0, Q4_K or Q6_K weights for few rows of x (decode) on GPUs, as
// llama.cpp's GPU backends run it: x quantized to int8 blocks of 32 (llama.cpp's quantization of
// activations, quantize-q8-math.wgsl) and each block's 32 products summed by eight dot4I8Packed, then
// scaled by both blocks' steps (w_int8 from int8-weights-*.wgsl: Q4_0's, Q4_K's and Q6_K's bits are
// spread to bytes, and a weight's offset, d q + m, comes in as m times the x half-block's sum of
// quants). A block costs one to five weight loads, two workgroup loads and eight integer dot products,
// where the float kernel (matvec-subgroup.wgsl) converts every weight to a float and multiplies it.
// The workgroup quantizes its rows of x once, into workgroup memory, with the norm or activation folded
// into the product applied as it reads them (x_scales / x_in, matvec-dp4a-x-*.wgsl; x4 from
// matmul-x-*.wgsl): once a workgroup rather than, as in the float kernels, once a row. Then its
// subgroups take its ROWS rows, lanes striding over a row's blocks.

override WG: u32 = 128u;
override ROWS: u32 = 8u;
override TT: u32 = 1u;
const MAX_T: u32 = 8u;
// Blocks of x staged: TT rows of k / 32 (the pipeline is built for one k).
override XB: u32 = 64u;

// Block o = t * (k / 32) + b of the staged x: its quants (two vec4s), its step and its halves' sums of quants.
var<workgroup> xs: array<vec4u, XB * 2u>;
var<workgroup> xd: array<f32, XB>;
var<workgroup> xsum: array<vec2f, XB>;

// A weight block dotted with staged block o: each half's 16 integer products summed exactly, times its
// scale, plus its offset times the half's sum of x quants, all times the block's step.
fn int8_dot(w: WInt8, o: u32) -> f32 {
  let i = vec2f(f32(idot16(w.q0, xs[2u * o])), f32(idot16(w.q1, xs[2u * o + 1u])));
  return (dot(w.d, i) + dot(w.m, xsum[o])) * xd[o];
}

@compute @workgroup_size(WG)
fn main(
  @builtin(workgroup_id) wg: vec3u,
  @builtin(local_invocation_index) lid: u32,
  @builtin(subgroup_id) sg: u32,
  @builtin(num_subgroups) nsg: u32,
  @builtin(subgroup_invocation_id) lane: u32,
  @builtin(subgroup_size) size: u32,
) {
  let nb = params.k / 32u;
  let first = (wg.x + wg.y * 65535u) * ROWS;
  // Each lane's first weight block (its subgroup's first row, block `lane`) is loaded before x is
  // staged, so its latency overlaps the staging rather than following the barrier: a prologue that
  // held every workgroup's first weight load behind a read of x slowed the float kernels (matvec-x-norm.wgsl).
  let r0 = w_row(min(first + sg, params.n - 1u), params.k);
  let w0 = w_int8(r0, min(lane, nb - 1u));

  let s = x_scales(lid, sg, nsg, lane);
  // One invocation a (token, block) of x.
  for (var o = lid; o < TT * nb; o += WG) {
    let t = o / nb;
    let b = o % nb;
    let xb = params.x_offset + t * params.x_stride + b * 32u;
    var v = array<vec4f, 8>();
    for (var i = 0u; i < 8u; i++) { v[i] = x_in(x4(xb + 4u * i), b * 8u + i, s[t]); }
    let step = q8_0_scale(v);
    let q = q8_pack(v, step.x);
    xs[2u * o] = q.lo;
    xs[2u * o + 1u] = q.hi;
    xd[o] = step.y;
    xsum[o] = q8_sums(q);
  }
  workgroupBarrier();

  for (var j = sg; j < ROWS; j += nsg) {
    let n = first + j;
    if (n >= params.n) { break; }
    let r = w_row(n, params.k);
    var acc = array<f32, MAX_T>();
    for (var b = lane; b < nb; b += size) {
      var w = w0;
      if (j != sg || b != lane) { w = w_int8(r, b); }
      for (var t = 0u; t < TT; t++) {
        let o = t * nb + b;
        acc[t] += int8_dot(w, o);
      }
    }
    for (var t = 0u; t < TT; t++) {
      let v = subgroupAdd(acc[t]);
      if (lane == 0u) { store(t, n, v); }
    }
  }
}
