// Attention for GPUs, heads of whole vec4s: one workgroup of WG (256) invocations per (token, query
// head), the work of a chunk of positions spread over all of them. A decode token's few heads are only
// a few workgroups on a GPU of 100+ cores, so what sets the time is the length of each invocation's chain
// of dependent loads, not bandwidth: the workgroup kernel (attention.wgsl) walked 64 positions at a time
// with a loop over the head per position, about 0.4 ms a layer at 600 positions on an H200. Here each
// invocation scores up to CHUNK / WG positions of a chunk (a head's vec4s loaded at once, the loop has a
// constant trip count), the chunk's maximum and sum are tree reductions, and the value sums are split
// over WG / HV groups of HV invocations, each group a stride of the chunk's positions, summed at the end.
// Online softmax across chunks, as in the other kernels. The reductions are written out in main: Mesa's
// llvmpipe (which the tests run this kernel on) lost writes across barriers inside a called function.
//
// Split positions (flash-decoding): with params.splits = S > 1, S workgroups share a (token, head) pair,
// each taking one S-th of its positions, so a decode step's few pairs fill more of the GPU; each writes
// its unnormalized sums with their softmax maximum and sum, and a combine pass (attention-combine.wgsl)
// merges them. Which of the two a kernel does is store_sum's: attention-parallel-out.wgsl (the head's
// output) or attention-parallel-partial.wgsl (a split's partial sums, into the buffer bound as out).
//
// WG (256 here: the reduction arrays' size), HV and MAX_HEAD_VEC come with attention-io-vec4.wgsl;
// k_one / v_one with attention-kv-f32.wgsl; out with attention-out-f32.wgsl. How the head's query is
// loaded (load_head, which ends with a barrier) and where a position's K and V come from (k_at, v_at):
// attention-parallel-plain.wgsl, or attention-parallel-rope.wgsl, which also applies RoPE and stores the
// token's own K and V (decode steps).

const CHUNK: u32 = 1024u;
const RED: u32 = 256u;

var<workgroup> q_shared: array<vec4f, MAX_HEAD_VEC>;
// A chunk's scores, then its softmax weights; and where each position's head starts in the cache.
var<workgroup> scores: array<f32, CHUNK>;
var<workgroup> bases: array<u32, CHUNK>;
var<workgroup> red: array<f32, RED>;
var<workgroup> partial: array<vec4f, RED>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let item = wg.x + wg.y * 65535u;
  let splits = params.splits;
  if (item >= params.tokens * params.heads * splits) { return; }
  let split = item % splits;
  let t = item / splits / params.heads;
  let h = item / splits % params.heads;
  let kh = kv_head(h);
  let kv_vec = params.kv_heads * HV;
  let seq = token_seq[t];
  let last = positions[t];
  // This workgroup's positions lo..hi-1: its split's share of the pair's (empty where splits outnumber them).
  let first = first_position(last);
  let span = last + 1u - first;
  let per = (span + splits - 1u) / splits;
  let lo = first + min(split * per, span);
  let hi = first + min(split * per + per, span);
  load_head(t, h, kh, seq, last, lid, split);

  // Invocation lid sums vec4 j of the head over positions g, g + groups, ... of each chunk.
  let groups = WG / HV;
  let j = lid % HV;
  let g = lid / HV;
  var m = -3.4e38;
  var l = 0.0;
  var acc = vec4f();
  for (var start = lo; start < hi; start += CHUNK) {
    let n = min(CHUNK, hi - start);
    var top = -3.4e38;
    for (var i = lid; i < n; i += WG) {
      let p = start + i;
      let base = kv_row(seq, p) * kv_vec + kh * HV;
      var s4 = vec4f();
      for (var d = 0u; d < HV; d++) { s4 += q_shared[d] * k_at(base, d, p, last); }
      var s = (s4.x + s4.y + s4.z + s4.w) * params.scale;
      if (params.softcap > 0.0) { s = params.softcap * tanh(s / params.softcap); }
      scores[i] = s;
      bases[i] = base;
      top = max(top, s);
    }
    red[lid] = top;
    workgroupBarrier();
    for (var w = WG / 2u; w > 0u; w >>= 1u) {
      if (lid < w) { red[lid] = max(red[lid], red[lid + w]); }
      workgroupBarrier();
    }
    let m_new = max(m, red[0]);
    workgroupBarrier(); // everyone has read red[0] before it is written again
    var sum = 0.0;
    for (var i = lid; i < n; i += WG) {
      let w = exp(scores[i] - m_new);
      scores[i] = w;
      sum += w;
    }
    let rescale = exp(m - m_new);
    red[lid] = sum;
    workgroupBarrier();
    for (var w = WG / 2u; w > 0u; w >>= 1u) {
      if (lid < w) { red[lid] += red[lid + w]; }
      workgroupBarrier();
    }
    // The sum's barriers also make every weight visible to the value sums below.
    l = l * rescale + red[0];
    acc *= rescale;
    // Four positions a round into four sums: a decode token's head is one workgroup, so its time is
    // this chain's length (about n / groups dependent loads), not bandwidth.
    var a0 = vec4f();
    var a1 = vec4f();
    var a2 = vec4f();
    var a3 = vec4f();
    var i = g;
    for (; i + 3u * groups < n; i += 4u * groups) {
      a0 += scores[i] * v_at(bases[i], j, start + i, last);
      a1 += scores[i + groups] * v_at(bases[i + groups], j, start + i + groups, last);
      a2 += scores[i + 2u * groups] * v_at(bases[i + 2u * groups], j, start + i + 2u * groups, last);
      a3 += scores[i + 3u * groups] * v_at(bases[i + 3u * groups], j, start + i + 3u * groups, last);
    }
    for (; i < n; i += groups) { a0 += scores[i] * v_at(bases[i], j, start + i, last); }
    acc += (a0 + a1) + (a2 + a3);
    m = m_new;
    // Every read of this chunk's scores, bases and red[0] is done before the next chunk writes them.
    workgroupBarrier();
  }
  partial[lid] = acc;
  workgroupBarrier();
  if (lid < HV) {
    var a = partial[lid];
    for (var k = 1u; k < groups; k++) { a += partial[k * HV + lid]; }
    store_sum(t, h, split, lid, a, m, l);
  }
}
