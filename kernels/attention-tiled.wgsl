// Attention for a prefill step on GPUs (flash attention's tiling): one workgroup per tile of BQ
// consecutive tokens of the step and one KV head, computing all GQ query heads of that KV head for
// those tokens: R = BQ * GQ query rows, TPR invocations a row. Each round stages BK positions' K and V
// heads in workgroup memory once for all R rows, where attention-parallel.wgsl (a workgroup per token and
// query head) loads every position's K and V again for each of its tokens and query heads: on an H200 a
// 1B-class 512-token prefill's attention was 7 of its 60 ms, bound by those loads.
// A row keeps its query head in registers and its softmax online (maximum m, sum l, and its share of
// the value sums, HV / TPR vec4s), as the other kernels do across chunks.
// A tile's tokens may belong to several sequences (a step batches prompts back to back): it walks each
// run of tokens of one sequence in turn, over that sequence's positions, the other rows masked.
// Heads of whole vec4s, an even number of them (HV), offsets and strides multiples of 4; io, kv and
// pages as for the vec4 kernels (attention-io-vec4.wgsl, attention-kv-f32.wgsl, attention-pages.wgsl).

override BQ: u32 = 16u;
override GQ: u32 = 4u;
override BK: u32 = 16u;
override TPR: u32 = 2u;
const MAX_HV: u32 = 32u;

var<workgroup> ks: array<vec4f, BK * HV>;
var<workgroup> vs: array<vec4f, BK * HV>;
var<workgroup> scores: array<f32, BQ * GQ * BK>;
// The current run: its end token, sequence, first position and end position.
var<workgroup> run: vec4u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let kh = wg.y;
  let t0 = wg.x * BQ;
  let t_end = min(t0 + BQ, params.tokens);
  let rows = BQ * GQ;
  // This invocation's row (token t0 + r / GQ, query head kh * GQ + r % GQ) and its share of the head's
  // value vec4s; invocations past the rows only help stage K and V.
  let r = lid / TPR;
  let part = lid % TPR;
  let live = r < rows && t0 + r / GQ < t_end;
  let t = min(t0 + r / GQ, t_end - 1u);
  let h = kh * GQ + r % GQ;
  let seq = token_seq[t];
  let last = positions[t];
  let first = first_position(last);
  var qh: array<vec4f, MAX_HV>;
  let qb = (params.q_offset + t * params.q_stride) / 4u + h * HV;
  for (var d = 0u; d < HV; d++) { qh[d] = q[qb + d]; }
  let share = HV / TPR;
  let j0 = part * share;
  var acc: array<vec4f, MAX_HV>;
  var m = -3.4e38;
  var l = 0.0;
  let kv_vec = params.kv_heads * HV;

  var tb = t0;
  loop {
    if (lid == 0u) {
      let s = token_seq[tb];
      var te = tb + 1u;
      while (te < t_end && token_seq[te] == s) { te++; }
      run = vec4u(te, s, first_position(positions[tb]), positions[te - 1u] + 1u);
    }
    let info = workgroupUniformLoad(&run);
    let in_run = live && seq == info.y;
    for (var p0 = info.z; p0 < info.w; p0 += BK) {
      // Stage K and V heads of positions p0 .. p0 + BK - 1 (the run's sequence; past its end, its last).
      for (var i = lid; i < BK * HV; i += WG) {
        let p = min(p0 + i / HV, info.w - 1u);
        let base = kv_row(info.y, p) * kv_vec + kh * HV;
        ks[i] = k_one(base, i % HV);
        vs[i] = v_one(base, i % HV);
      }
      workgroupBarrier();
      // The row's scores for its TPR-th of the positions.
      if (r < rows) {
        for (var i = part; i < BK; i += TPR) {
          let p = p0 + i;
          var s4 = vec4f();
          for (var d = 0u; d < HV; d++) { s4 += qh[d] * ks[i * HV + d]; }
          var s = (s4.x + s4.y + s4.z + s4.w) * params.scale;
          if (params.softcap > 0.0) { s = params.softcap * tanh(s / params.softcap); }
          let attends = in_run && p >= first && p <= last && p < info.w;
          scores[r * BK + i] = select(-3.4e38, s, attends);
        }
      }
      workgroupBarrier();
      if (r < rows) {
        var top = m;
        for (var i = 0u; i < BK; i++) { top = max(top, scores[r * BK + i]); }
        let rescale = exp(m - top);
        l *= rescale;
        for (var c = 0u; c < share; c++) { acc[c] *= rescale; }
        for (var i = 0u; i < BK; i++) {
          let s = scores[r * BK + i];
          // A masked position weighs nothing, also while no position of the row has been seen (m, top
          // both the sentinel).
          let w = select(0.0, exp(s - top), s > -3.0e38);
          l += w;
          for (var c = 0u; c < share; c++) { acc[c] += w * vs[i * HV + j0 + c]; }
        }
        m = top;
      }
      workgroupBarrier();
    }
    tb = info.x;
    if (tb >= t_end) { break; }
  }
  if (live) {
    let ob = (params.out_offset + t * params.out_stride) / 4u + h * HV + j0;
    for (var c = 0u; c < share; c++) { out[ob + c] = acc[c] / l; }
  }
}
