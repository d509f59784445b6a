// Causal grouped-query attention over whole sequences packed one after another, for training. One
// invocation per (token, head) runs an online softmax over its sequence's keys up to itself and keeps the
// log-sum-exp of the scores (stats[2i]) so the backward pass recomputes probabilities instead of storing
// T² of them. HD (the head size), V (vec4f when HD is a multiple of 4, else f32: one load per 4 values
// where it can), HDV = HD / width and vdot are put in front of this file by the wrapper: private arrays
// need a constant length. It also writes lines holding `$d` once per vector of the head
// (kernels/unroll.ts): a loop there would count against llvmpipe's loop budget at every key
// (runtime/loop-budget.ts), and the shader compiler leaves a head of 64 vec4s a loop. (On CPU
// rasterisers a head of more than 16 vectors is written out in chunks of 16, a loop over the chunks,
// whose compile time written out in full was minutes: TrainAttentionKernels.)
// Params, q, k, v, span and the index helpers are in attention-io.wgsl.

@group(0) @binding(4) var<storage, read_write> out: array<V>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let idx = row_index(gid, nwg);
  if (idx >= params.tokens * params.heads) { return; }
  let t = idx / params.heads;
  let h = idx % params.heads;
  let kvh = kv_head(h);
  var qv: array<V, HDV>;
  var acc: array<V, HDV>;
  for (var d = 0u; d < HDV; d++) { qv[d] = q[idx * HDV + d]; acc[d] = V(0.0); }
  var m = -3.0e38;
  var l = 0.0;
  for (var s = sequence_start(t); s <= t; s++) {
    let kb = (s * params.kv_heads + kvh) * HDV;
    var score = 0.0;
    score += vdot(qv[$du], k[kb + $du]);
    score *= params.scale;
    let m_new = max(m, score);
    let corr = exp(m - m_new);
    let p = exp(score - m_new);
    l = l * corr + p;
    acc[$du] = acc[$du] * corr + p * v[kb + $du];
    m = m_new;
  }
  for (var d = 0u; d < HDV; d++) { out[idx * HDV + d] = acc[d] / l; }
  stats[2u * idx] = m + log(l);
}
