// x for the down projection of a gated FFN, read straight from the fused gate|up rows: x[i] =
// act(gate[i]) * up[i] with up at i + glu_up. This folds the SwiGLU/GeGLU pass into the product that
// consumes it (one dispatch fewer per layer). Offsets, strides and glu_up are multiples of 4 (the
// wrapper checks), so each x4 is two aligned loads. act() comes from activation-*.wgsl.

fn x4(i: u32) -> vec4f {
  let g = x[i >> 2u];
  let u = x[(i + params.glu_up) >> 2u];
  return vec4f(act(g.x), act(g.y), act(g.z), act(g.w)) * u;
}

fn x1(i: u32) -> f32 {
  return act(x[i >> 2u][i & 3u]) * x[(i + params.glu_up) >> 2u][i & 3u];
}
