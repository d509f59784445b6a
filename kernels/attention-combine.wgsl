// Merges split attention's partial sums (attention-parallel-partial.wgsl) into each head's output: vec4 j
// of (token t, head h) is sum_s a_s * exp(m_s - M) / sum_s l_s * exp(m_s - M), M the splits' largest
// maximum, as flash-decoding's reduction. One invocation per output vec4; a pair's splits are few (see
// AttentionKernel.splitsFor), so each invocation walks them all, twice.

struct Params {
  tokens: u32,
  heads: u32,
  splits: u32,
  out_offset: u32,
  out_stride: u32,
}

override WG: u32 = 64u;
// Vec4s of one head.
override HV: u32;

@group(0) @binding(0) var<storage, read> partials: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4f>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let i = (wg.x + wg.y * 65535u) * WG + lid;
  if (i >= params.tokens * params.heads * HV) { return; }
  let pair = i / HV;
  let j = i % HV;
  let stride = HV + 1u;
  let base = pair * params.splits * stride;
  var top = -3.4e38;
  for (var s = 0u; s < params.splits; s++) { top = max(top, partials[base + s * stride + HV].x); }
  var l = 0.0;
  var a = vec4f();
  for (var s = 0u; s < params.splits; s++) {
    let ml = partials[base + s * stride + HV];
    let w = exp(ml.x - top);
    l += ml.y * w;
    a += partials[base + s * stride + j] * w;
  }
  let t = pair / params.heads;
  let h = pair % params.heads;
  out[(params.out_offset + t * params.out_stride) / 4u + h * HV + j] = a / l;
}
