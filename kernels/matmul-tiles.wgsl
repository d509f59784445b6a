// Tiled matrix product for many rows of x (prefill) on GPUs: a workgroup computes a 32-token x 64-row
// tile of y. Per 32-wide step of k it decodes the 64 x 32 weights once into workgroup memory (one
// 16-weight span per thread) and stages 32 x 32 of x beside them; each thread then accumulates a 4x4
// register block from those tiles. Rows are padded to 33 floats so column reads avoid bank conflicts.
// The 4x4 block is four vec4 accumulators rather than an indexed array, so CPU rasterisers, which do
// not unroll loops, keep it in registers too.

const BT: u32 = 32u;
const BN: u32 = 64u;
const BK: u32 = 32u;
const LD: u32 = 33u;
const WG: u32 = 128u;

var<workgroup> ws: array<f32, BN * LD>;
var<workgroup> xs: array<f32, BT * LD>;

fn ws_put(i: u32, v: vec4f) {
  ws[i] = v.x;
  ws[i + 1u] = v.y;
  ws[i + 2u] = v.z;
  ws[i + 3u] = v.w;
}

fn xs_put(i: u32, v: vec4f) {
  xs[i] = v.x;
  xs[i + 1u] = v.y;
  xs[i + 2u] = v.z;
  xs[i + 3u] = v.w;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n_base = wg.x * BN;
  let t_base = wg.y * BT;
  // Outputs of this thread: rows n_base + tn + 16 i, tokens t_base + tt + 8 j, for i, j < 4.
  let tn = lid % 16u;
  let tt = lid / 16u;
  // The weight span this thread decodes at each step: row lrow, k half lhalf of the step.
  let lrow = lid / 2u;
  let lhalf = lid % 2u;
  let wlive = n_base + lrow < params.n;
  let wr = w_row(min(n_base + lrow, params.n - 1u), params.k);
  // acc_j holds tokens tt + 8j against rows tn, tn + 16, tn + 32, tn + 48.
  var acc0 = vec4f();
  var acc1 = vec4f();
  var acc2 = vec4f();
  var acc3 = vec4f();
  let steps = (params.k + BK - 1u) / BK;
  for (var c = 0u; c < steps; c++) {
    let s = c * 2u + lhalf;
    let m = w_span_or_zero(wr, s, wlive);
    let wi = lrow * LD + lhalf * 16u;
    ws_put(wi, m[0]);
    ws_put(wi + 4u, m[1]);
    ws_put(wi + 8u, m[2]);
    ws_put(wi + 12u, m[3]);
    // x: 32 x 32 floats as 256 groups of 4, two per thread.
    for (var e = 0u; e < 2u; e++) {
      let g = lid + e * WG;
      let row = g / 8u;
      let col = (g % 8u) * 4u;
      let tg = t_base + row;
      let kg = c * BK + col;
      xs_put(row * LD + col, x4_or_zero(params.x_offset + tg * params.x_stride + kg, kg, tg < params.t));
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      let b = vec4f(ws[tn * LD + kk], ws[(tn + 16u) * LD + kk], ws[(tn + 32u) * LD + kk], ws[(tn + 48u) * LD + kk]);
      acc0 += xs[tt * LD + kk] * b;
      acc1 += xs[(tt + 8u) * LD + kk] * b;
      acc2 += xs[(tt + 16u) * LD + kk] * b;
      acc3 += xs[(tt + 24u) * LD + kk] * b;
    }
    workgroupBarrier();
  }
  store4(t_base + tt, n_base + tn, acc0);
  store4(t_base + tt + 8u, n_base + tn, acc1);
  store4(t_base + tt + 16u, n_base + tn, acc2);
  store4(t_base + tt + 24u, n_base + tn, acc3);
}

// Row t of y at rows n, n + 16, n + 32, n + 48.
fn store4(t: u32, n: u32, v: vec4f) {
  if (t >= params.t) { return; }
  for (var i = 0u; i < 4u; i++) {
    if (n + 16u * i < params.n) { store(t, n + 16u * i, v[i]); }
  }
}
