// The GPU matrix-vector kernels reading RMSNorm(x) instead of x: the norm that precedes the QKV and
// gate|up products folded into them, so a decode layer needs no norm pass of its own. Every workgroup
// first sums the squares of its (at most 8) rows of x, a few KiB that a GPU reads from cache; the
// products then weigh x by the norm weight as they read it, and scale each token's result by its
// 1 / rms as it is stored: W (g * x * s) = s * (W (g * x)).

@group(0) @binding(NORM_BINDING) var<storage, read> norm_w: array<vec4f>;

var<workgroup> norm_red: array<f32, WG * 8u>;
var<workgroup> inv_rms: array<f32, 8>;

// Call first, from every invocation (it has barriers). Needs WG a power of two and k % 4 == 0.
fn norm_prologue(lid: u32) {
  let k4 = params.k / 4u;
  for (var t = 0u; t < TT; t++) {
    var s = 0.0;
    let xb = (params.x_offset + t * params.x_stride) / 4u;
    for (var i = lid; i < k4; i += WG) {
      let v = x[xb + i];
      s += dot(v, v);
    }
    norm_red[t * WG + lid] = s;
  }
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    workgroupBarrier();
    if (lid < stride) {
      for (var t = 0u; t < TT; t++) {
        norm_red[t * WG + lid] += norm_red[t * WG + lid + stride];
      }
    }
  }
  workgroupBarrier();
  if (lid < TT) {
    inv_rms[lid] = inverseSqrt(norm_red[lid * WG] / f32(params.k) + params.norm_eps);
  }
  workgroupBarrier();
}

fn unit_dot(m: mat4x4f, kk: vec4u, xb: u32) -> f32 {
  return dot(m[0], x4(xb + kk.x) * norm_w[kk.x >> 2u]) + dot(m[1], x4(xb + kk.y) * norm_w[kk.y >> 2u]) +
    dot(m[2], x4(xb + kk.z) * norm_w[kk.z >> 2u]) + dot(m[3], x4(xb + kk.w) * norm_w[kk.w >> 2u]);
}

fn x_at(xb: u32, i: u32) -> f32 {
  return x1(xb + i) * norm_w[i >> 2u][i & 3u];
}

fn out_scale(t: u32) -> f32 {
  return inv_rms[t];
}
