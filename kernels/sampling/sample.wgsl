// Picks one token per row without reading the logits back: greedy argmax at temperature 0, otherwise
// Gumbel-max sampling (exact sampling from softmax(logits / T), reproducible for a seed). Also returns the
// chosen token's log-probability under the (masked, tempered) distribution, for logprobs and confidences.
// Output per row: [token, logprob bits]; token is 0xffffffff when the mask allowed nothing.


var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;
var<workgroup> red_best: array<f32, WG>;
var<workgroup> red_idx: array<u32, WG>;
var<workgroup> red_z: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let r = wg.x;
  if (r >= params.rows) { return; }
  let cfg = rows_cfg[r];
  let base = r * params.logits_stride;
  var m = NEG_INF;
  var s = 0.0;
  var best = NEG_INF;
  var best_i = 0xffffffffu;
  var best_z = NEG_INF;
  for (var i = lid; i < params.vocab; i += WG) {
    if (!allowed(r, params.mask_words, cfg.use_mask, i)) { continue; }
    let z = scaled(logits[base + i], cfg.temperature);
    if (z > m) { s = s * exp(m - z) + 1.0; m = z; } else { s += exp(z - m); }
    var score = z;
    if (cfg.temperature > 0.0) { score = z + gumbel(cfg.seed, cfg.counter, i); }
    if (score > best || best_i == 0xffffffffu) { best = score; best_i = i; best_z = z; }
  }
  red_m[lid] = m;
  red_s[lid] = s;
  red_best[lid] = best;
  red_idx[lid] = best_i;
  red_z[lid] = best_z;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
    if (lid < stride) {
      let o = lid + stride;
      // Combine running softmax sums.
      let m1 = red_m[lid];
      let m2 = red_m[o];
      let mm = max(m1, m2);
      if (mm > NEG_INF) { red_s[lid] = red_s[lid] * exp(m1 - mm) + red_s[o] * exp(m2 - mm); }
      red_m[lid] = mm;
      // Argmax; on ties the lower token id wins, as in llama.cpp's greedy sampler.
      let i1 = red_idx[lid];
      let i2 = red_idx[o];
      let take = i2 != 0xffffffffu && (i1 == 0xffffffffu || red_best[o] > red_best[lid] || (red_best[o] == red_best[lid] && i2 < i1));
      if (take) { red_best[lid] = red_best[o]; red_idx[lid] = i2; red_z[lid] = red_z[o]; }
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    out[r * 2u] = red_idx[0];
    out[r * 2u + 1u] = bitcast<u32>(red_z[0] - (red_m[0] + log(red_s[0])));
  }
}
