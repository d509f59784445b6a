// store4() (matmul-store4.wgsl) for products with a bias: y[t, n .. n+3] (+)= v + bias[n .. n+3].
@group(0) @binding(3) var<storage, read> bias: array<f32>;

fn store4(t: u32, n: u32, v: vec4f) {
  let i = (params.y_offset + t * params.y_stride + n) >> 2u;
  let o = params.bias_offset + n;
  let b = v + vec4f(bias[o], bias[o + 1u], bias[o + 2u], bias[o + 3u]);
  let old = y[i];
  y[i] = select(b, old + b, params.accumulate != 0u);
}
