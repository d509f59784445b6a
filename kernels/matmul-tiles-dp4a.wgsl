// Tiled Q8_0, Q4_0, Q4_K or Q6_K matrix product for many rows of x (prefill) on GPUs, in int8 as
// llama.cpp's GPU backends run quantized prefill without matrix units: a workgroup of 128 computes a
// BT-token (32, or 64 for the lab) x 128-row tile of y. Per step of KB blocks of 32 along k each invocation stages its row's KB
// weight blocks as bytes (w_int8, int8-weights-*.wgsl: Q8_0's quants as they lie, Q4_0's and Q4_K's
// nibbles spread; a weight's offset, d q + m, applied as m times the x block's sum; one d and m a
// block, or with HALVES one each 16-element half, as Q6_K's sub-blocks have), and the 32 tokens' x
// blocks are quantized into workgroup memory, one an invocation at a time, as llama.cpp quantizes
// activations (quantize-q8-math.wgsl), so x and W meet as int8: a block's 32 products are eight
// dot4I8Packed, scaled once by both steps (by half with HALVES). Each invocation's outputs are rows
// tn + 16 i (8) x tokens tt + 8 j (4; 8 with BT 64), as in matmul-tiles-vec4.wgsl: per block it loads
// 16 vec4s of weights and 8 of x from workgroup memory for 256 integer dot products (1 024
// multiply-adds), where the float tile loads 96 vec4s for as many; with BT 64, 16 and 16 for 512.
// BN 64 (a 32 x 64 tile, for small grids): 64 invocations stage the weights and the other 64 quantize x,
// and each computes rows tn + 16 i for i < 4 only (the float 32 x 64 tile took 4x as long for
// SmolLM2-135M's small products on an H200).

// Tokens a tile: 32, or 64 (int8TileTokens, the lab's: each staged weight block serves twice the tokens).
override BT: u32 = 32u;
override BN: u32 = 128u;
const BN_MAX: u32 = 128u;
// Blocks of 32 along k a step stages (2; 4 for the lab, whose 28 KB of workgroup memory halve the
// barriers a row of k costs).
override KB: u32 = 2u;
// A staged row's vec4s: two a block, then one of padding (an odd count: a quarter-warp's vec4 loads
// fall on distinct banks).
override LDQ: u32 = 2u * KB + 1u;
const WG: u32 = 128u;
// Each half of a weight block has its own d and m (Q6_K): the halves' integer sums are scaled apart,
// and the staged steps and sums are two a block (SCALES), 17.25 KB of workgroup memory against 15.
override HALVES: bool = false;
override SCALES: u32 = select(1u, 2u, HALVES);

var<workgroup> wq: array<vec4u, BN_MAX * LDQ>;
// A staged block's d and m (with HALVES, each half's).
var<workgroup> wd: array<f32, BN_MAX * KB * SCALES>;
var<workgroup> wm: array<f32, BN_MAX * KB * SCALES>;
var<workgroup> xq: array<vec4u, BT * LDQ>;
var<workgroup> xd: array<f32, BT * KB>;
// Each staged x block's sum of quants (with HALVES, each half's).
var<workgroup> xo: array<f32, BT * KB * SCALES>;

// A weight block's 32 quants (a, b) dotted with an x block's (c, e), summed exactly.
fn isum(a: vec4u, b: vec4u, c: vec4u, e: vec4u) -> i32 {
  return idot16(a, c) + idot16(b, e);
}

// Four tokens' staged x blocks (tokens t, t + 8, t + 16, t + 24, block c of the step): quants lo/hi,
// steps dx, sums of quants whole (xsum) or with HALVES by half (x0, x1).
struct XGroup {
  lo: array<vec4u, 4>,
  hi: array<vec4u, 4>,
  dx: vec4f,
  xsum: vec4f,
  x0: vec4f,
  x1: vec4f,
}

fn x_group(t: u32, c: u32) -> XGroup {
  var g = XGroup();
  for (var j = 0u; j < 4u; j++) {
    let u = t + 8u * j;
    g.lo[j] = xq[u * LDQ + 2u * c];
    g.hi[j] = xq[u * LDQ + 2u * c + 1u];
    g.dx[j] = xd[u * KB + c];
    if (HALVES) {
      g.x0[j] = xo[(u * KB + c) * 2u];
      g.x1[j] = xo[(u * KB + c) * 2u + 1u];
    } else {
      g.xsum[j] = xo[u * KB + c];
    }
  }
  return g;
}

// Staged row r's block c against a group of four tokens' x blocks: four dot products.
fn row_terms(r: u32, c: u32, x: XGroup) -> vec4f {
  let a = wq[r * LDQ + 2u * c];
  let b = wq[r * LDQ + 2u * c + 1u];
  let o = (r * KB + c) * SCALES;
  if (HALVES) {
    let d = vec2f(wd[o], wd[o + 1u]);
    let m = vec2f(wm[o], wm[o + 1u]);
    let s0 = vec4f(f32(idot16(a, x.lo[0])), f32(idot16(a, x.lo[1])), f32(idot16(a, x.lo[2])), f32(idot16(a, x.lo[3])));
    let s1 = vec4f(f32(idot16(b, x.hi[0])), f32(idot16(b, x.hi[1])), f32(idot16(b, x.hi[2])), f32(idot16(b, x.hi[3])));
    return (s0 * d.x + s1 * d.y + x.x0 * m.x + x.x1 * m.y) * x.dx;
  }
  let s = vec4f(f32(isum(a, b, x.lo[0], x.hi[0])), f32(isum(a, b, x.lo[1], x.hi[1])), f32(isum(a, b, x.lo[2], x.hi[2])), f32(isum(a, b, x.lo[3], x.hi[3])));
  return (s * wd[o] + x.xsum * wm[o]) * x.dx;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n_base = wg.x * BN;
  let t_base = wg.y * BT;
  let tn = lid % 16u;
  let tt = lid / 16u;
  let nb = params.k / 32u;
  // The row this invocation stages (clamped to the last row; zeros past the matrix).
  let wlive = n_base + lid < params.n;
  let wr = w_row(min(n_base + lid, params.n - 1u), params.k);
  // The x blocks (token o / KB, block o % KB of each step) it quantizes: o = xl, xl + XQ, ... below
  // BT KB, XQ invocations quantizing: all of them, or a 64-row tile's 64 that stage no weights (for
  // the others xl wraps past any o).
  let xl = lid - select(0u, BN, BN < WG);
  let xq_n = WG - select(0u, BN, BN < WG);
  var acc0 = vec4f();
  var acc1 = vec4f();
  var acc2 = vec4f();
  var acc3 = vec4f();
  var acc4 = vec4f();
  var acc5 = vec4f();
  var acc6 = vec4f();
  var acc7 = vec4f();
  // With BT 64: the same rows for tokens tt + 32 + 8 j.
  var acc8 = vec4f();
  var acc9 = vec4f();
  var acc10 = vec4f();
  var acc11 = vec4f();
  var acc12 = vec4f();
  var acc13 = vec4f();
  var acc14 = vec4f();
  var acc15 = vec4f();
  let steps = (nb + KB - 1u) / KB;
  for (var s = 0u; s < steps; s++) {
    if (lid < BN) {
      for (var c = 0u; c < KB; c++) {
        let b = s * KB + c;
        let live = wlive && b < nb;
        let w = w_int8(wr, min(b, nb - 1u));
        wq[lid * LDQ + 2u * c] = select(vec4u(), w.q0, live);
        wq[lid * LDQ + 2u * c + 1u] = select(vec4u(), w.q1, live);
        let o = (lid * KB + c) * SCALES;
        wd[o] = select(0.0, w.d.x, live);
        wm[o] = select(0.0, w.m.x, live);
        if (HALVES) {
          wd[o + 1u] = select(0.0, w.d.y, live);
          wm[o + 1u] = select(0.0, w.m.y, live);
        }
      }
    }
    for (var o = xl; o < BT * KB; o += xq_n) {
      let xtok = o / KB;
      let xblk = o % KB;
      var v = array<vec4f, 8>();
      if (t_base + xtok < params.t && s * KB + xblk < nb) {
        let xb = params.x_offset + (t_base + xtok) * params.x_stride + (s * KB + xblk) * 32u;
        for (var i = 0u; i < 8u; i++) { v[i] = x4(xb + 4u * i); }
      }
      let step = q8_0_scale(v);
      let q = q8_pack(v, step.x);
      xq[xtok * LDQ + 2u * xblk] = q.lo;
      xq[xtok * LDQ + 2u * xblk + 1u] = q.hi;
      xd[xtok * KB + xblk] = step.y;
      let sums = q8_sums(q);
      if (HALVES) {
        xo[(xtok * KB + xblk) * 2u] = sums.x;
        xo[(xtok * KB + xblk) * 2u + 1u] = sums.y;
      } else {
        xo[xtok * KB + xblk] = sums.x + sums.y;
      }
    }
    workgroupBarrier();
    for (var c = 0u; c < KB; c++) {
      let g = x_group(tt, c);
      acc0 += row_terms(tn, c, g);
      acc1 += row_terms(tn + 16u, c, g);
      acc2 += row_terms(tn + 32u, c, g);
      acc3 += row_terms(tn + 48u, c, g);
      if (BN > 64u) {
        acc4 += row_terms(tn + 64u, c, g);
        acc5 += row_terms(tn + 80u, c, g);
        acc6 += row_terms(tn + 96u, c, g);
        acc7 += row_terms(tn + 112u, c, g);
      }
      if (BT > 32u) {
        let h = x_group(tt + 32u, c);
        acc8 += row_terms(tn, c, h);
        acc9 += row_terms(tn + 16u, c, h);
        acc10 += row_terms(tn + 32u, c, h);
        acc11 += row_terms(tn + 48u, c, h);
        if (BN > 64u) {
          acc12 += row_terms(tn + 64u, c, h);
          acc13 += row_terms(tn + 80u, c, h);
          acc14 += row_terms(tn + 96u, c, h);
          acc15 += row_terms(tn + 112u, c, h);
        }
      }
    }
    workgroupBarrier();
  }
  store_rows4(t_base + tt, n_base + tn, acc0, acc1, acc2, acc3);
  if (BN > 64u) { store_rows4(t_base + tt, n_base + tn + 64u, acc4, acc5, acc6, acc7); }
  if (BT > 32u) {
    store_rows4(t_base + tt + 32u, n_base + tn, acc8, acc9, acc10, acc11);
    if (BN > 64u) { store_rows4(t_base + tt + 32u, n_base + tn + 64u, acc12, acc13, acc14, acc15); }
  }
}
