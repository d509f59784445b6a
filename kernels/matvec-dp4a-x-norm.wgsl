// How matvec-dp4a.wgsl reads x when the product folds in the RMSNorm before it: each token's 1 / rms
// (x_scales, summed by the whole workgroup before x is quantized), then x_in(v) = v * s * g with the norm
// weight g, in llama.cpp's order (rms_norm, then the weight), so the quantized values are the ones
// llama.cpp quantizes.

@group(0) @binding(NORM_BINDING) var<storage, read> norm_w: array<vec4f>;

// One partial sum a subgroup and token (subgroups hold at least 4 invocations).
var<workgroup> squares: array<f32, MAX_T * (WG / 4u)>;

fn x_scales(lid: u32, sg: u32, nsg: u32, lane: u32) -> array<f32, MAX_T> {
  let per = WG / 4u;
  for (var t = 0u; t < TT; t++) {
    let xb = params.x_offset + t * params.x_stride;
    var sum = 0.0;
    for (var i = lid; i < params.k / 4u; i += WG) {
      let v = x4(xb + 4u * i);
      sum += dot(v, v);
    }
    let part = subgroupAdd(sum);
    if (lane == 0u) { squares[t * per + sg] = part; }
  }
  workgroupBarrier();
  var s: array<f32, MAX_T>;
  for (var t = 0u; t < TT; t++) {
    var sum = 0.0;
    for (var j = 0u; j < nsg; j++) { sum += squares[t * per + j]; }
    s[t] = inverseSqrt(sum / f32(params.k) + params.norm_eps);
  }
  return s;
}

fn x_in(v: vec4f, i: u32, s: f32) -> vec4f {
  return v * s * norm_w[i];
}
