// Causal attention with grouped-query heads over the paged KV cache.
// One workgroup per (token, query head). The token attends to positions 0..pos[t] of its own sequence,
// read page by page through the page table, with an online softmax over blocks of WG positions so any
// context length fits in constant workgroup memory.

const WG: u32 = 64u;
// Each thread owns MAX_HEAD_DIM / WG output dimensions.
const PER_THREAD: u32 = MAX_HEAD_DIM / WG;

var<workgroup> q_shared: array<f32, MAX_HEAD_DIM>;
var<workgroup> scores: array<f32, WG>;
var<workgroup> weights: array<f32, WG>;
var<workgroup> rows: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let item = wg.x + wg.y * 65535u;
  if (item >= params.tokens * params.heads) { return; }
  let t = item / params.heads;
  let h = item % params.heads;
  let kh = kv_head(h);
  let hd = params.head_dim;
  let kv_dim = params.kv_heads * hd;
  let seq = token_seq[t];
  let last = positions[t];
  let first = first_position(last);

  let qb = params.q_offset + t * params.q_stride + h * hd;
  for (var d = lid; d < hd; d += WG) { q_shared[d] = q[qb + d]; }
  workgroupBarrier();

  var m = -3.4e38;
  var l = 0.0;
  var acc: array<f32, PER_THREAD>;
  for (var start = first; start <= last; start += WG) {
    let p = start + lid;
    var s = -3.4e38;
    if (p <= last) {
      let row = kv_row(seq, p);
      rows[lid] = row;
      let kb = row * kv_dim + kh * hd;
      var dot = 0.0;
      for (var d = 0u; d < hd; d++) { dot += q_shared[d] * k_cache[kb + d]; }
      s = dot * params.scale;
      if (params.softcap > 0.0) { s = params.softcap * tanh(s / params.softcap); }
    }
    scores[lid] = s;
    workgroupBarrier();
    let n = min(WG, last + 1u - start);
    var bmax = m;
    for (var i = 0u; i < n; i++) { bmax = max(bmax, scores[i]); }
    weights[lid] = select(0.0, exp(s - bmax), lid < n);
    workgroupBarrier();
    let rescale = exp(m - bmax);
    var bsum = 0.0;
    for (var i = 0u; i < n; i++) { bsum += weights[i]; }
    l = l * rescale + bsum;
    for (var j = 0u; j < PER_THREAD; j++) {
      let d = lid + j * WG;
      if (d < hd) {
        var a = acc[j] * rescale;
        for (var i = 0u; i < n; i++) { a += weights[i] * v_cache[rows[i] * kv_dim + kh * hd + d]; }
        acc[j] = a;
      }
    }
    m = bmax;
    workgroupBarrier();
  }
  let ob = params.out_offset + t * params.out_stride + h * hd;
  for (var j = 0u; j < PER_THREAD; j++) {
    let d = lid + j * WG;
    if (d < hd) { out[ob + d] = acc[j] / l; }
  }
}
